//! What a tree tells of a node without reading it: a folder's entries and a node's
//! attributes, as `stat`, listings and the kernel's caches need them.

use super::nodes::Ino;

/// What a folder or file is, as `stat` needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub ino: Ino,
    pub kind: Kind,
}

impl Entry {
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }
}

/// A node's attributes, from metadata alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    /// Exact byte size of a file; 0 for folders.
    pub size: u64,
    /// Sub-folders + 2 for folders whose sub-folders are known without reading fragment
    /// metadata; 1 ("not counted", as btrfs reports) for fragment folders, so listing
    /// 100,000 fragments parses none of them. Files: 1.
    pub nlink: u32,
    /// Milliseconds since the epoch: a fragment's nodes carry its end timestamp.
    pub mtime_ms: Option<u64>,
    /// Whether `size` is the file's size. A text file whose size is only known once it
    /// was rendered says 0 and `false` until then; readers read it to its end (the
    /// mount serves it with direct I/O, as procfs does).
    pub exact_size: bool,
}

/// How long the kernel may keep what it learnt of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Never changes while it exists (everything inside a fragment).
    Immutable,
    /// May change or vanish when the array changes (the fragment list, array-level
    /// files, a fragment folder that a vacuum removes).
    Changing,
    /// Like `Changing`, but a file open reads one state of it to the end (the merged
    /// view of the array): the kernel may cache pages while it is open.
    Snapshot,
}

/// Keeps what an open file needs readable until it is closed (see [`FileTree::open`]).
pub type OpenGuard = Box<dyn std::any::Any + Send + Sync>;
