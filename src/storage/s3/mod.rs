//! Arrays in S3-compatible object storage (AWS S3, Garage, Ceph RGW, MinIO), through the
//! `object_store` crate.
//!
//! A request costs a round trip (milliseconds), so the store asks for little and keeps
//! what it got:
//! - a listing is one delimited request for `prefix/` (the trailing slash: array names
//!   can be prefixes of one another); common prefixes are the folders, and the sizes and
//!   ETags come with it, so no object is ever asked for its size on its own, and no
//!   prefix is ever probed as an object;
//! - reads are ranged GETs, several ranges of one object fetched concurrently; a tile's
//!   chunk headers are found in one fetch of the whole tile ([`Store::walk_window`]),
//!   cut into parts of about 1 MiB issued together ([`parts`]);
//! - fetched bytes are kept by (key, ETag) within a budget ([`cache`]): the chunk reads
//!   after a tile's walk, and a sequential reader's next reads, cost no request;
//! - with a disk cache (`--cache-dir`), fetched bytes are kept there too, by (endpoint,
//!   bucket, key, version) ([`disk`]): a later mount reads them without a request;
//! - a sequential reader gets a read-ahead window that starts at 1 MiB and doubles while
//!   it keeps up ([`window`]); a random reader never fetches ahead;
//! - a read that another reader (or the read-ahead) is fetching already waits for that
//!   fetch rather than asking again;
//! - failures are retried with backoff (5xx, 503 SlowDown, connection resets, timeouts)
//!   for a bounded time, then fail with EIO and a message naming the bucket, the key, the
//!   byte range and the server's answer. A body shorter or longer than asked is an error,
//!   never short bytes.
//!
//! FUSE serves from synchronous threads: the store owns one tokio runtime and each call
//! waits for its requests with `block_on`. The runtime has threads: a process that forks
//! (the mount daemon) opens its S3 stores after forking.

//!
//! Without the `s3` feature (a library built for fuzzing, say) only the configuration
//! is here, and opening an `s3://` URI says fragfs was built without S3 support.

#[cfg(feature = "s3")]
pub mod cache;
#[cfg(feature = "s3")]
mod client;
pub mod config;
#[cfg(feature = "s3")]
pub mod disk;
#[cfg(feature = "s3")]
mod errors;
#[cfg(feature = "s3")]
pub mod failure;
#[cfg(feature = "s3")]
mod fetching;
#[cfg(feature = "s3")]
mod inflight;
#[cfg(feature = "s3")]
pub mod parts;
#[cfg(feature = "s3")]
mod plan;
#[cfg(feature = "s3")]
mod request;
#[cfg(feature = "s3")]
mod retry;
#[cfg(feature = "s3")]
mod state;
#[cfg(feature = "s3")]
mod store;
#[cfg(feature = "s3")]
mod sync;
#[cfg(feature = "s3")]
pub mod window;

pub use config::{is_s3_uri, S3Options, S3Uri};
#[cfg(feature = "s3")]
pub use store::S3Store;
