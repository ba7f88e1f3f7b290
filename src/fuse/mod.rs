//! The FUSE edge: a thin adapter that turns kernel requests into [`FileTree`] calls and
//! view errors into errnos. No decoding happens here; `fragfs cat` and the mount share
//! every read.
//!
//! What makes it kernel-friendly: inode numbers come from the tree's node table (stable
//! for the life of the mount), attributes and entries carry long TTLs because the data is
//! immutable, opens ask the kernel to keep its page cache (and the listings of folders
//! inside a fragment), and `readdirplus` returns attributes so `ls -l` and `find` never
//! need a second request, let alone a decoded tile.
//!
//! Every reply that hands the kernel an inode number (a lookup, a `readdirplus` entry)
//! is counted in the tree first ([`FileTree::remember`]), and FORGET gives the count
//! back: the node tables keep what the kernel holds and a fixed number of idle nodes,
//! so memory does not grow with the paths ever looked up (see `view::nodes`).
//!
//! An open file keeps what it reads (the tree's [`OpenGuard`](crate::view::OpenGuard)):
//! a fragment that TileDB vacuums while a file of it is open reads on with the bytes it
//! had, as a removed local file does; its path is gone once the kernel's entry for the
//! fragment folder expires.
//!
//! Files: `adapter.rs` (the fuser `Filesystem`: one method per kernel request),
//! `inodes.rs` (the numbers the kernel holds, folder entries), `handles.rs` (open files
//! and folders), `attrs.rs` (attributes, TTLs, folder caching), `passthrough.rs` (files
//! the kernel reads from the disk cache itself), `errno.rs` (view errors as errnos,
//! logged once), `config.rs` (mount options, the fuser configuration).
//!
//! [`FileTree`]: crate::view::FileTree
//! [`FileTree::remember`]: crate::view::FileTree::remember

mod adapter;
mod attrs;
mod config;
mod errno;
mod handles;
mod inodes;
mod passthrough;

pub use adapter::{mount, FragFs};
pub use config::{fuse_config, MountConfig, DEFAULT_READ_AHEAD};
pub use passthrough::passthrough_possible;
