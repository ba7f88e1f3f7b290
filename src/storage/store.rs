//! The [`Store`] trait: what every kind of store answers (listings, sizes, versions,
//! ranged reads, read-ahead hints, pins), and the values it answers with.

use std::fmt::Debug;
use std::sync::Arc;

use crate::error::Result;

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listed {
    pub name: String,
    /// The object's size; `None` for a folder (a common prefix in object storage).
    pub size: Option<u64>,
}

impl Listed {
    pub fn is_folder(&self) -> bool {
        self.size.is_none()
    }
}

/// One entry of a [`Store::list_names`] listing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Named {
    pub name: String,
    pub folder: bool,
    /// A file's size, where the store had it for free (object storage lists sizes).
    pub size: Option<u64>,
}

/// One byte range of an object to read: exactly `len` bytes at `offset`, appended to
/// `out`.
#[derive(Debug)]
pub struct RangeRead<'a> {
    pub offset: u64,
    pub len: u64,
    pub out: &'a mut Vec<u8>,
}

/// Keeps objects readable while it lives, even if they are deleted meanwhile (see
/// [`Store::pin`]). Dropping it lets them go.
pub type Pin = Box<dyn std::any::Any + Send + Sync>;

pub trait Store: Send + Sync + Debug {
    /// Where the root is, for messages: a folder path, `s3://bucket/prefix`, `memory:...`.
    fn location(&self) -> String;

    /// The root as an absolute URI, as TileDB writes the absolute URIs of group members
    /// (`file:///data/g`, `s3://bucket/g`): to tell whether such a member lives inside.
    fn uri(&self) -> String {
        self.location()
    }

    /// What names the array at this root in the disk cache's keys: its URI, and for
    /// object storage also the server (the same bucket on two servers is two arrays).
    fn cache_identity(&self) -> String {
        self.uri()
    }

    /// The entries directly under the folder `prefix` (`""` is the root), sorted by
    /// name. A missing folder is empty. Symbolic links are never listed.
    fn list(&self, prefix: &str) -> Result<Vec<Listed>>;

    /// The entries directly under `prefix`, for a caller that needs their names and
    /// kinds but few sizes: a local folder answers from the directory alone, without a
    /// `stat` per file (an array's `__commits/` holds a marker per fragment: 10,000
    /// stats to mount 10,000 fragments). Sorted by name; sizes where they are free.
    fn list_names(&self, prefix: &str) -> Result<Vec<Named>> {
        Ok(self
            .list(prefix)?
            .into_iter()
            .map(|e| Named {
                folder: e.is_folder(),
                size: e.size,
                name: e.name,
            })
            .collect())
    }

    /// The size of object `key`; a missing object is an error whose errno is ENOENT.
    fn size(&self, key: &str) -> Result<u64>;

    /// What tells this version of object `key` from any other the same key may hold
    /// (after a restore from a backup, say): the disk cache (`--cache-dir`) puts it in
    /// the keys of what it derives from the object (a fragment's files, from its
    /// metadata file's), so bytes decoded from an older version are never served for a
    /// newer one. `None` when the store can tell none: nothing derived from the object
    /// is cached. A local file: its size and modification time (in ns, not following a
    /// link); object storage: the ETag its listing gives; memory: a CRC of the bytes.
    fn version(&self, _key: &str) -> Result<Option<String>> {
        Ok(None)
    }

    /// Reads every range of object `key`, each appended to its own buffer: all of them,
    /// or an error (a range past the end of the object is one, naming the object, never
    /// a short read). On an error the buffers may have grown in capacity only.
    fn read(&self, key: &str, ranges: &mut [RangeRead<'_>]) -> Result<()>;

    /// A hint that `[offset, offset + len)` of `key` will be read soon. Errors are left
    /// for the real read to report.
    fn read_ahead(&self, _key: &str, _offset: u64, _len: u64) {}

    /// How many bytes of a tile's start the chunk-header walk reads in one request.
    /// Headers sit between the chunks, spread over the whole tile: where a request is
    /// expensive (object storage), the walk reads the tile in one request; where it is
    /// cheap (a local file in the page cache) but copying a large tile is not, it reads
    /// small windows after a [`Store::read_ahead`] of the tile.
    fn walk_window(&self) -> u64 {
        64 << 20
    }

    /// Whether every request is a round trip over the network (object storage): small
    /// reads that a reader will want soon are then worth asking for together, since
    /// waiting for them one after another costs a round trip each.
    fn is_remote(&self) -> bool {
        false
    }

    /// Keeps every object under the folder `prefix` readable until the returned guard is
    /// dropped, even if it is deleted meanwhile (as POSIX keeps an open, removed file
    /// readable): a file open in a fragment that TileDB vacuums reads on. Stores that
    /// cannot (object storage) return a guard that keeps nothing.
    fn pin(&self, prefix: &str) -> Result<Pin>;

    /// A store rooted at the folder `prefix` of this one (a group's member).
    fn sub(&self, prefix: &str) -> Result<Arc<dyn Store>>;

    /// Reads `len` bytes at `offset` of `key`.
    fn read_range(&self, key: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_into(key, offset, len, &mut out)?;
        Ok(out)
    }

    /// Reads `len` bytes at `offset` of `key` that are all the caller wants from there (a
    /// chunk header of a walk that decodes nothing): a store that reads ahead of
    /// sequential readers does not take this for one.
    fn read_alone(&self, key: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.read_range(key, offset, len)
    }

    /// Appends `len` bytes at `offset` of `key` to `out`.
    fn read_into(&self, key: &str, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        self.read(key, &mut [RangeRead { offset, len, out }])
    }

    /// The whole object (schemas, commit files, small metadata).
    fn read_all(&self, key: &str) -> Result<Vec<u8>> {
        let size = self.size(key)?;
        self.read_range(key, 0, size)
    }
}
