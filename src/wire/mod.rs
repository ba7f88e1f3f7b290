//! The network protocols' messages as the doors of `fragfs serve` take them: pure
//! parsers over bytes, as [`crate::format`] is for the files of an array. No socket, no
//! runtime, no tree: each takes what a client sent and says what it means or why it is
//! refused, so every one of them is fuzzed alone (`fuzz/`) and a door only decides what
//! to answer.
//!
//! - [`path`]: request paths (percent-decoding, segments that could leave the tree);
//! - [`range`]: the `Range` header;
//! - [`auth`]: the `Authorization` header (bearer tokens, basic credentials, base64);
//! - [`propfind`]: WebDAV `PROPFIND` bodies;
//! - [`xdr`] and [`rpc`]: ONC RPC records and the XDR they carry (NFS).

pub mod auth;
pub mod path;
pub mod propfind;
pub mod range;
pub mod rpc;
pub mod xdr;
