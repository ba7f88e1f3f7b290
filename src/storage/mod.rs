//! Where an array's bytes come from. Everything above reads through the [`Store`] trait,
//! keyed by `/`-separated paths relative to the array (or group, or Filo fragment)
//! root, so the same code serves a local folder ([`LocalStore`]), object storage
//! ([`S3Store`]), or
//! bytes held in memory for tests ([`MemoryStore`]). Nothing outside this module opens a
//! file of an array.
//!
//! The operations are the ones an object store offers cheaply: list a prefix (with the
//! sizes), the size of one object, ranged reads, and a hint that a range will be read
//! soon. A request to an object store costs milliseconds, so callers read what they
//! need in few, large requests: several ranges of one object in one call, and a tile's
//! chunk headers in one read of the tile's start ([`Store::walk_window`]).
//!
//! Beside the stores: [`Scratch`], the unlinked temporary files the readers keep large
//! results in, and the persistent decoded cache ([`diskcache`]).

pub mod diskcache;
mod key;
pub mod local;
pub mod memory;
mod pins;
pub mod s3;
mod scratch;
mod store;

pub use key::join;
pub(crate) use key::{check_key, past_end};
pub use local::LocalStore;
pub use memory::MemoryStore;
#[cfg(feature = "s3")]
pub use s3::S3Store;
pub use scratch::Scratch;
pub use store::{Listed, Named, Pin, RangeRead, Store};
