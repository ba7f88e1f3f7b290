//! The NFSv3 door (RFC 1813): a read-only export of the tree that macOS, Linux and
//! Windows mount with the NFS client they ship, on one TCP port that carries NFS, MOUNT
//! and a minimal portmapper (so `mount -o port=N,mountport=N` needs no rpcbind).
//!
//! - **Handles** ([`handles`]): the server's instance id and a tree number. The numbers
//!   of the handles used most recently are held in the tree (NFS has no FORGET); an
//!   older handle whose number the tree dropped answers `NFS3ERR_STALE`, after which
//!   the client looks the name up again. A handle never names the wrong file.
//! - **Read-only**: every procedure that would change something (SETATTR, WRITE,
//!   CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT) answers
//!   `NFS3ERR_ROFS`; ACCESS grants reading only; modes are 0444 and 0555.
//! - **Sizes** come from `stat`. A text file whose size is only known once rendered is
//!   sized on GETATTR of that file, in the sizing pool ([`Sizes`]: the connection asks
//!   it before answering the call, holding no thread); one still unsized then answers
//!   `NFS3ERR_JUKEBOX` ("try again later"; clients retry). LOOKUP, READ and
//!   READDIRPLUS (which must stay cheap for a folder) send no attributes for it rather
//!   than a wrong size, so the client asks GETATTR.
//! - **Listings** page through one [`Listing`](crate::view::Listing) per folder and verifier: every entry,
//!   numbered as a page gets to it, in time linear in the entries.
//! - **Reads** run on the blocking pool, at most [`RTMAX`] bytes a call, the file held
//!   ([`crate::view::held::Held`]) while read. Connections are bounded and timed out as
//!   [`connection`] says.
//! - **No authentication**: NFSv3's AUTH_SYS is a uid the client states, no control, so
//!   a non-loopback address needs `--insecure-listen` (see [`crate::serve::Doors`]).
//!
//! Files: [`mod@door`] answers the calls (no socket; the fuzzer reaches it without the
//! network stack), [`handles`] makes and resolves file handles, [`connection`] reads
//! records from a TCP connection and bounds them.

#[cfg(feature = "serve")]
pub mod connection;
pub mod door;
pub mod handles;

pub use door::*;
