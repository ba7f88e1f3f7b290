//! The persistent cache of decoded bytes (`--cache-dir`): what a mount decoded once is
//! kept on local disk, across mounts, and served from there (by FUSE passthrough when
//! the kernel allows) without decoding again.
//!
//! Why it can be kept forever: a committed fragment never changes (new data is a new
//! fragment with a unique name; vacuuming only removes), so a fragment's decoded file is
//! a function of (array, fragment, file); a merged file is a function of the state it
//! shows (the schema, the visible fragments and the deletes applied), which
//! [`CacheScope::State`] names in full. A fragment is named by its folder name and by
//! the version of its metadata file ([`crate::storage::Store::version`]: size and
//! modification time on a local disk, the ETag on object storage), so a fragment
//! rewritten in place (restored from a backup) gets new keys and its old decoded bytes
//! are never served for it. Keys also carry the build of fragfs that decoded them
//! ([`build_id`]): a fixed decoder never serves what an older one produced, and a build
//! that cannot tell itself apart keeps no decoded bytes at all ([`keeps`]).
//!
//! Objects of object storage are kept here too, as they were fetched (raw, before any
//! decoding): an object's bytes are a function of its store, key and version (its ETag),
//! which [`CacheScope::Object`] names, so they are kept whatever build of fragfs reads
//! them (see `storage/s3/disk.rs`).
//!
//! On disk, under the cache folder (made 0700, with a `CACHEDIR.TAG`):
//! `v2/<array>/fragments/<fragment>/<file>.{data,idx}`,
//! `v2/<array>/states/<state>/<file>.{data,idx}` and
//! `v2/objects/<store>/<object>.{data,idx}`, where `<array>`, `<state>`, `<file>`,
//! `<store>` and `<object>` are digests of the full key text, which each index also
//! holds and is checked against (see [`entry`]). Per-fragment folders are named after
//! the fragment, so the entries of a vacuumed fragment are dropped as one folder
//! ([`DiskCache::retain_fragments`]); objects go by least recent use only. Beside
//! `v2/`: `lock`, `usage` and `writers` (see [`lock`] and [`usage`]).
//!
//! The folder must be the daemon's user's and writable by nobody else, and no file in
//! it is opened through a symbolic link ([`private`]): the daemon, often root, hands
//! these files to the kernel to serve.
//!
//! Bounds: the cache stays within its size, counted in the folder itself so that the
//! bound holds whatever number of daemons share it ([`usage`]); a write that finds it
//! full is refused room (its bytes are served, not kept) and wakes the eviction thread
//! ([`evict`]), which removes the least recently used entries (an entry's last use is
//! its index's modification time) off the read path. The cache never brings the disk's
//! free space under a floor ([`free_space_floor`]). Several daemons may share one
//! folder: entries are made and removed under the folder's lock ([`lock`]), and the
//! bytes of a key are the same whoever decodes them, so two writers of one block write
//! the same bytes.

mod cache;
pub mod entry;
mod evict;
mod evictions;
mod folder;
mod key;
mod lock;
pub mod private;
mod usage;
pub mod verify;

pub use cache::{CacheConfig, DiskCache};
pub use entry::{Entry, ReadOutcome, BLOCK};
pub use folder::{free_space_floor, ArraySummary, LAYOUT};
pub use key::{build_id, keeps, CacheKey, CacheScope};
pub use usage::Room;
