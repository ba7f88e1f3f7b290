//! `fragfs serve`: the tree a mount shows, behind network doors, for the places FUSE
//! cannot go (macOS and Windows laptops, unprivileged containers, browsers, clusters).
//!
//! A door is a network protocol; a face is a kind of file: never the same word. One tree
//! object answers every door, so every path, byte and size is the mount's. Each door is
//! a thin adapter beside `fuse/`: [`http`], [`webdav`] (whose GET is the HTTP door's),
//! [`s3api`] (with [`s3list`]) and [`nfs`]. What they share: the connections, their
//! bounds, TLS and the rules every request meets before a door sees it ([`conn`],
//! [`origin`], [`tls`]), a served file held, validated and streamed ([`mod@file`]), listings
//! page by page ([`listing`]) and the folder page a browser reads ([`page`], with
//! [`page_tables`] and [`html`]), the answers' memory budget ([`budget`]) and the pool that
//! sizes text files ([`sizing`]). What clients send is parsed in [`crate::wire`].
//! [`Server`] runs the doors on one tokio runtime: `fragfs serve` until a signal, tests
//! and embedders for as long as they hold it.
//!
//! The `serve` feature brings the network (hyper, tokio, rustls, s3s). The NFS door's
//! answers to calls are plain functions of the tree and compile without it, so the
//! fuzzer reaches them with no network stack.

/// Items that need the network stack (the `serve` feature).
macro_rules! with_network {
    ($($item:item)*) => { $( #[cfg(feature = "serve")] $item )* };
}

with_network! {
    pub mod budget;
    pub mod conn;
    pub mod file;
    pub mod html;
    pub mod http;
    pub mod listing;
    pub mod origin;
    pub mod page;
    pub mod page_tables;
    pub mod s3api;
    pub mod s3list;
    mod server;
    pub mod sizing;
    pub mod tls;
    pub mod webdav;
    pub use server::*;
}

pub mod nfs;
