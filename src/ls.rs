//! `fragfs ls`: the tree printed like `ls` / `ls -l` / `ls -R`.

use crate::error::{Error, Result};
use crate::view::{FileTree, Ino, Kind};

fn line(view: &dyn FileTree, ino: Ino, kind: Kind, name: &str, long: bool) -> Result<String> {
    if !long {
        return Ok(format!("{name}\n"));
    }
    // As `ls -l` of the mount shows it: a text file not read yet is 0.
    let (kind, size) = match kind {
        Kind::Dir => ('d', 0),
        Kind::File => ('-', view.stat(ino)?.size),
    };
    Ok(format!("{kind} {size:>12} {name}\n"))
}

/// Lists `node` (a folder's entries, or a file itself) at `path`.
pub fn list(
    view: &dyn FileTree,
    node: Ino,
    path: &str,
    long: bool,
    recursive: bool,
) -> Result<String> {
    let kind = view.stat(node)?.kind;
    if kind == Kind::File {
        return line(view, node, kind, path, long);
    }
    let mut out = String::new();
    let mut stack = vec![(path.trim_end_matches('/').to_string(), node)];
    let mut first = true;
    while let Some((dir_path, dir)) = stack.pop() {
        if recursive {
            if !first {
                out.push('\n');
            }
            let shown = if dir_path.is_empty() { "/" } else { &dir_path };
            out.push_str(&format!("{shown}:\n"));
        }
        first = false;
        // A number handed out long ago may have been dropped (a tree keeps a bounded
        // number of idle nodes, see `view::nodes`): a folder met before a walk through
        // many others is found again by its path, an entry of a huge listing by name.
        let (dir, entries) = match view.list(dir) {
            Err(Error::NotFound(_)) => {
                let dir = view.resolve(&dir_path)?;
                (dir, view.list(dir)?)
            }
            listed => (dir, listed?),
        };
        let mut subdirs = Vec::new();
        for e in &entries {
            let text = match line(view, e.ino, e.kind, &e.name, long) {
                Err(Error::NotFound(_)) => {
                    line(view, view.lookup(dir, &e.name)?.ino, e.kind, &e.name, long)?
                }
                text => text?,
            };
            out.push_str(&text);
            if recursive && e.is_dir() {
                subdirs.push((format!("{dir_path}/{}", e.name), e.ino));
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(out)
}
