//! The kernel's inode numbers: the tree's node numbers (stable for the life of the
//! mount), each counted in the tree while the kernel holds it. Every reply that hands
//! the kernel a number (a lookup, a `readdirplus` entry) is counted first
//! ([`FileTree::remember`]), and FORGET gives the count back: the node tables keep
//! what the kernel holds and a fixed number of idle nodes (see `view::nodes`).

use std::sync::Arc;

use fuser::Errno;

use super::errno::errno;
use crate::view::{FileTree, Ino, Kind};

/// A folder's entries as `opendir` listed them (`.` and `..` first): every `readdir` of
/// that handle pages through this one listing, so a long listing costs one `list`
/// rather than one per kernel request (quadratic), and a rescan between two requests
/// cannot shift the offsets (an entry skipped or seen twice).
pub type Listing = Arc<Vec<(String, Ino, Kind)>>;

/// The number of `name` in folder `dir`, counted as held by the kernel (the caller
/// hands it over, or gives it back with `forget`). `listed` is the number a listing
/// gave; if the tree dropped it since (idle nodes go, oldest first), or it is not
/// given, the name is looked up.
pub fn held(view: &dyn FileTree, dir: Ino, name: &str, listed: Option<Ino>) -> Result<Ino, Errno> {
    if let Some(ino) = listed {
        if view.remember(ino) {
            return Ok(ino);
        }
    }
    // A number can go idle and be dropped between the lookup and `remember` only
    // if a whole idle limit of other nodes came in between: one more try is plenty,
    // three never fail.
    for _ in 0..3 {
        let ino = view
            .lookup(dir, name)
            .map_err(|e| errno(&e, dir, "lookup"))?
            .ino;
        if view.remember(ino) {
            return Ok(ino);
        }
    }
    log::error!("lookup of {name} in inode {dir}: its number was dropped three times");
    Err(Errno::EIO)
}

/// Folder `dir`'s entries with `.` and `..` first, as `readdir` must list them.
pub fn entries(view: &dyn FileTree, dir: Ino) -> Result<Vec<(String, Ino, Kind)>, Errno> {
    let listed = view.list(dir).map_err(|e| errno(&e, dir, "readdir"))?;
    let parent = view.parent(dir).map_err(|e| errno(&e, dir, "readdir"))?;
    let mut out = Vec::with_capacity(listed.len() + 2);
    out.push((".".to_string(), dir, Kind::Dir));
    out.push(("..".to_string(), parent, Kind::Dir));
    out.extend(listed.into_iter().map(|e| (e.name, e.ino, e.kind)));
    Ok(out)
}
