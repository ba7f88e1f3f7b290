//! `fragfs serve`: the tree a mount shows, on network protocols, for the places FUSE
//! cannot go (macOS and Windows laptops, unprivileged containers, browsers, clusters).
//!
//! One tree object answers every face, so every path, byte and size is the mount's.
//! Each face is a thin adapter beside `fuse.rs`: [`http`] (with [`listing`]),
//! [`webdav`] (whose GET is the HTTP face's), [`nfs`]; what a
//! served file is (held, validated, streamed) is [`file`], the
//! connection handling they share is [`conn`], the request-path rules [`path`].
//! [`Server`] runs the faces on one tokio runtime: `fragfs serve` until a signal,
//! tests and embedders for as long as they hold it.

#[cfg(feature = "serve")]
pub mod budget;
#[cfg(feature = "serve")]
pub mod conn;
#[cfg(feature = "serve")]
pub mod file;
#[cfg(feature = "serve")]
pub mod http;
#[cfg(feature = "serve")]
pub mod listing;
pub mod nfs;
#[cfg(feature = "serve")]
pub mod origin;
#[cfg(feature = "serve")]
pub mod s3api;
#[cfg(feature = "serve")]
pub mod s3list;
#[cfg(feature = "serve")]
mod server;
#[cfg(feature = "serve")]
pub mod sizing;
#[cfg(feature = "serve")]
pub mod tls;
#[cfg(feature = "serve")]
pub mod webdav;

#[cfg(feature = "serve")]
pub use server::*;
