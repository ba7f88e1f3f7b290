//! Opening what a path or URI holds as a tree of files: which tree fits (a TileDB array,
//! a group, a Filo fragment or chunk), over which store (a local folder, S3), read
//! through the disk cache where there is one.

use std::path::Path;
use std::sync::Arc;

use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::filo::{ColumnType, FormatVersion, MANIFEST_FILE};
use crate::format::group::{sniff_object_type, ObjectType};
use crate::storage::diskcache::{CacheConfig, DiskCache};
use crate::storage::local::LocalPath;
use crate::storage::s3::{is_s3_uri, S3Options};
use crate::storage::{LocalStore, Store};

use super::cache::Caches;
use super::cached::CachedTree;
use super::file_tree::FileTree;
use super::filo::FiloTree;
use super::group::GroupTree;
use super::tiledb::ArrayTree;

/// Default bound of the decoded-chunk cache.
pub const DEFAULT_CACHE_SIZE: u64 = 256 << 20;

/// How to read a lone Filo chunk file: a chunk does not record its column type (nor,
/// for one kind, the writer's version), which a fragment directory's manifest gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChunkOptions {
    pub column_type: Option<ColumnType>,
    pub version: FormatVersion,
}

/// Opens what `path` holds, a local path or an `s3://bucket/prefix` URI (reached as
/// `s3` says), read through the disk cache `disk` (`--cache-dir`, opened by
/// [`open_disk_cache`]) where there is one: its decoded files are kept there, and an S3
/// store keeps the bytes it fetches there too, so a later mount asks the store for
/// none of what was read before. On object storage the cache budget is shared half and
/// half between the fetched bytes and the decoded chunks, so the whole stays within
/// `cache_size`.
pub fn open_source(
    path: &Path,
    s3: &S3Options,
    options: OpenOptions,
    chunk: ChunkOptions,
    cache_size: u64,
    disk: Option<Arc<DiskCache>>,
) -> Result<Arc<dyn FileTree>> {
    let tree = if is_s3_uri(path) {
        open_s3(path, s3, options, cache_size, disk.clone())?
    } else {
        open_tree(path, options, chunk, cache_size)?
    };
    Ok(match disk {
        Some(cache) => Arc::new(CachedTree::new(tree, cache)),
        None => tree,
    })
}

#[cfg(feature = "s3")]
fn open_s3(
    path: &Path,
    s3: &S3Options,
    options: OpenOptions,
    cache_size: u64,
    disk: Option<Arc<DiskCache>>,
) -> Result<Arc<dyn FileTree>> {
    let uri = path.to_string_lossy();
    let store = crate::storage::S3Store::open(&uri, s3, cache_size / 2, disk)?;
    open_store(Arc::new(store), options, cache_size - cache_size / 2)
}

#[cfg(not(feature = "s3"))]
fn open_s3(
    path: &Path,
    _s3: &S3Options,
    _options: OpenOptions,
    _cache_size: u64,
    _disk: Option<Arc<DiskCache>>,
) -> Result<Arc<dyn FileTree>> {
    Err(Error::InvalidArgument(format!(
        "{}: this fragfs was built without S3 support (the `s3` feature)",
        path.display()
    )))
}

/// Opens the TileDB array at `path` (a local folder or `s3://bucket/prefix`, reached as
/// `s3` says) as its tree, for what only an array has (`fragfs refs`): a group, a Filo
/// fragment or anything else is refused, saying what it is.
pub fn open_array(
    path: &Path,
    s3: &S3Options,
    options: OpenOptions,
    cache_size: u64,
) -> Result<ArrayTree> {
    let store: Arc<dyn Store> = if is_s3_uri(path) {
        s3_store(path, s3, cache_size / 2)?
    } else {
        match LocalStore::open_path(path)? {
            LocalPath::Folder(store) => Arc::new(store),
            LocalPath::File(..) => {
                return Err(Error::NotAnArray(format!(
                    "{}: a file, not a TileDB array folder",
                    path.display()
                )))
            }
        }
    };
    let root = store.list("")?;
    if root
        .iter()
        .any(|e| e.name == MANIFEST_FILE && !e.is_folder())
    {
        return Err(Error::NotAnArray(format!(
            "{}: a Filo fragment, not a TileDB array",
            path.display()
        )));
    }
    if sniff_object_type(root.iter().map(|e| (e.name.as_str(), e.is_folder()))) == ObjectType::Group
    {
        return Err(Error::NotAnArray(format!(
            "{}: a TileDB group: give the path of one of its arrays",
            path.display()
        )));
    }
    let array = Array::open(store, options)?;
    Ok(ArrayTree::new(array, cache_size))
}

#[cfg(feature = "s3")]
fn s3_store(path: &Path, s3: &S3Options, cache: u64) -> Result<Arc<dyn Store>> {
    let uri = path.to_string_lossy();
    Ok(Arc::new(crate::storage::S3Store::open(
        &uri, s3, cache, None,
    )?))
}

#[cfg(not(feature = "s3"))]
fn s3_store(path: &Path, _s3: &S3Options, _cache: u64) -> Result<Arc<dyn Store>> {
    Err(Error::InvalidArgument(format!(
        "{}: this fragfs was built without S3 support (the `s3` feature)",
        path.display()
    )))
}

/// The disk cache that `config` names (`--cache-dir`), opened (made if needed), or
/// `None` without one: opened before the source, so the one cache serves both the
/// decoded files and an S3 store's fetched bytes ([`open_source`]).
///
/// A cache folder that cannot be used is no reason to fail a mount (or `serve`, `cat`,
/// `ls`), which reads right without it: a folder not owned by this user or writable by
/// others (refused: see [`crate::storage::diskcache::private`]), one that cannot be
/// made or written. Then this says why in one log line and answers `None`: the caller
/// goes on without the cache. (Never an error now; the `Result` is kept for callers.)
pub fn open_disk_cache(config: Option<&CacheConfig>) -> Result<Option<Arc<DiskCache>>> {
    let Some(config) = config else {
        return Ok(None);
    };
    let cache = match DiskCache::open(config) {
        Ok(cache) => Arc::new(cache),
        Err(e) => {
            log::error!(
                "disk cache {}: not used: {e}; reading without it",
                config.dir.display()
            );
            return Ok(None);
        }
    };
    log::info!(
        "disk cache {}: {} MiB of at most {} MiB used (the disk keeps {} MiB free)",
        config.dir.display(),
        cache.used() >> 20,
        cache.budget() >> 20,
        cache.floor() >> 20
    );
    Ok(Some(cache))
}

/// Opens what the local `path` holds, sniffing which tree fits: a Filo fragment folder (it has
/// `filo_fragment.json`), a lone Filo chunk (a file, with `chunk` giving its column
/// type), or a TileDB array.
pub fn open_tree(
    path: &Path,
    options: OpenOptions,
    chunk: ChunkOptions,
    cache_size: u64,
) -> Result<Arc<dyn FileTree>> {
    match LocalStore::open_path(path)? {
        LocalPath::Folder(store) => open_store(Arc::new(store), options, cache_size),
        LocalPath::File(store, name) => {
            let column_type = chunk.column_type.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: a file: give its Filo column type with --filo-type (one of {})",
                    path.display(),
                    ColumnType::ALL.map(|t| t.name()).join(", ")
                ))
            })?;
            Ok(Arc::new(FiloTree::open_chunk(
                Arc::new(store),
                &name,
                column_type,
                chunk.version,
                cache_size,
            )?))
        }
    }
}

/// Opens the tree of what the root of `store` holds: a Filo fragment or a TileDB array.
pub fn open_store(
    store: Arc<dyn Store>,
    options: OpenOptions,
    cache_size: u64,
) -> Result<Arc<dyn FileTree>> {
    let root = store.list("")?;
    if root
        .iter()
        .any(|e| e.name == MANIFEST_FILE && !e.is_folder())
    {
        return Ok(Arc::new(FiloTree::open_fragment(store, cache_size)?));
    }
    let entries = root.iter().map(|e| (e.name.as_str(), e.is_folder()));
    if sniff_object_type(entries) == ObjectType::Group {
        let caches = Caches::new(cache_size);
        return Ok(Arc::new(GroupTree::open(store, options, caches)?));
    }
    let array = Array::open(store, options)?;
    Ok(Arc::new(ArrayTree::new(array, cache_size)))
}
