//! What names a cached file ([`CacheKey`], [`CacheScope`]) and which build may keep it
//! ([`build_id`], [`keeps`]).

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What a cached file is: the array it belongs to, the scope that fixes its bytes, and
/// the file's path inside that scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// The array's identity: its canonical location (a folder's absolute path, an
    /// `s3://bucket/prefix`); for an object, its store (endpoint and bucket).
    pub array: String,
    pub scope: CacheScope,
    /// The file inside the scope, as the tree shows it (`a/data.bin`, `zarr/a/c/0/0`);
    /// for an object, its key in the bucket.
    pub file: String,
    /// Whether these bytes were decrypted (only cached with `--cache-decrypted`).
    pub decrypted: bool,
}

/// What fixes a cached file's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// A fragment, by its folder name and the version of its metadata file (see
    /// [`crate::storage::Store::version`]): a fragment's files never change, unless
    /// the fragment is rewritten in place (restored from a backup), which the version
    /// tells. Another version is another key, in the same place on disk: the entry of
    /// the old one is made anew when the new one is read.
    Fragment { name: String, version: String },
    /// A merged state, described in full (timestamp, schema, visible fragments with
    /// their versions, deletes): the same text is the same bytes.
    State(String),
    /// An object of object storage as fetched, by its version (`etag "..."`, or its size
    /// and modification time where the listing gives no ETag): another version of the
    /// key is another entry, so bytes of a rewritten object are never served for it.
    /// Raw bytes do not depend on the decoder: the key does not carry the build.
    Object(String),
}

/// The file this code was loaded from: the fragfs executable, or the shared library
/// that embeds the library (the Python package's extension module, run by a `python`
/// executable that decodes nothing).
fn own_file() -> std::io::Result<PathBuf> {
    // SAFETY: `Dl_info` is four pointers, for which all zeros (null) is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `dladdr` only reads the address it is given (a function of this object,
    // mapped for as long as its code runs) and writes into `info`, a local of the
    // type it expects.
    let found = unsafe { libc::dladdr(own_file as *const libc::c_void, &mut info) };
    if found != 0 && !info.dli_fname.is_null() {
        // SAFETY: on success `dli_fname` is a NUL-terminated path the dynamic loader
        // owns, valid while this object is loaded (it is: this code is running); it is
        // copied out at once.
        let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
        // The main program's name can come as it was typed (relative): the kernel's
        // path of it is exact.
        if path.is_absolute() {
            return Ok(path);
        }
    }
    std::env::current_exe()
}

/// An identity of this fragfs build (a CRC of the bytes of the file its code came from,
/// [`own_file`], with their size and version): decoded bytes are only served to the
/// build that decoded them. `None` when that file cannot be read (a sandbox, a deleted
/// file): the version alone would let two builds of one version (a fix made since)
/// serve each other's bytes, so such a build keeps no decoded bytes ([`keeps`]).
pub fn build_id() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| {
        let exe = own_file().and_then(std::fs::read);
        match exe {
            Ok(bytes) => Some(format!(
                "fragfs {} {:08x}-{}",
                env!("CARGO_PKG_VERSION"),
                crc32fast::hash(&bytes),
                bytes.len()
            )),
            Err(e) => {
                log::warn!(
                    "disk cache: the file of this fragfs build cannot be read ({e}): it cannot \
                     be told from another of version {}, so no decoded bytes are cached",
                    env!("CARGO_PKG_VERSION")
                );
                None
            }
        }
    })
    .as_deref()
}

/// Whether bytes of `scope` may be kept by a build whose identity is `build`.
///
/// Decoded bytes (a fragment's or a state's files) depend on the decoder, so they are
/// kept only under a build that is told apart from every other ([`build_id`]). Objects
/// fetched from object storage are kept whatever the build: their bytes are the store's
/// as they came (still filtered, still encrypted), keyed by the object's version, and
/// no decoder made them; keeping them is what spares a later mount the requests.
pub fn keeps(scope: &CacheScope, build: Option<&str>) -> bool {
    matches!(scope, CacheScope::Object(_)) || build.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In an executable (this test binary) the code's file is the executable itself.
    #[test]
    fn the_code_s_file_is_the_executable_that_runs_it() {
        let own = own_file().unwrap().canonicalize().unwrap();
        let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert_eq!(own, exe);
        assert!(build_id().unwrap().starts_with("fragfs "));
    }
}
