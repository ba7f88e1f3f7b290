//! `fragfs ls`: the tree printed like `ls` / `ls -l` / `ls -R`.

use crate::error::Result;
use crate::view::tree::FileTree;
use crate::view::Node;

fn line(view: &dyn FileTree, node: Node, name: &str, long: bool) -> Result<String> {
    if !long {
        return Ok(format!("{name}\n"));
    }
    let (kind, size) = if node.is_dir() {
        ('d', 0)
    } else {
        ('-', view.size(node)?)
    };
    Ok(format!("{kind} {size:>12} {name}\n"))
}

/// Lists `node` (a folder's entries, or a file itself) at `path`.
pub fn list(
    view: &dyn FileTree,
    node: Node,
    path: &str,
    long: bool,
    recursive: bool,
) -> Result<String> {
    if !node.is_dir() {
        return line(view, node, path, long);
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
            out.push_str(&line(view, e.node, &e.name, long)?);
            if recursive && e.node.is_dir() {
                subdirs.push((format!("{dir_path}/{}", e.name), e.node));
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(out)
}
