//! `fragfs ls`: the tree printed like `ls` / `ls -l` / `ls -R`.

use crate::error::Result;
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
        let entries = view.list(dir)?;
        let mut subdirs = Vec::new();
        for e in &entries {
            out.push_str(&line(view, e.ino, e.kind, &e.name, long)?);
            if recursive && e.is_dir() {
                subdirs.push((format!("{dir_path}/{}", e.name), e.ino));
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(out)
}
