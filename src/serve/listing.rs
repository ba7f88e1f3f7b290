//! A folder of the tree as the HTTP face shows it: an HTML page (names, sizes, links;
//! the array's `array.json` and `schema.json` shown below, pretty-printed) or JSON.

use serde_json::{json, Value};

use crate::error::Result;
use crate::view::{FileTree, Ino, Kind};
use crate::wire::path::encode;

/// One entry of a listing: what `stat` says, without rendering anything.
pub struct Shown {
    pub name: String,
    pub ino: Ino,
    pub dir: bool,
    /// `None` for a folder, or a text file whose size shows once it was read.
    pub size: Option<u64>,
    pub mtime_ms: Option<u64>,
}

/// The entries of folder `dir`, in the tree's order.
pub fn entries(tree: &dyn FileTree, dir: Ino) -> Result<Vec<Shown>> {
    let mut out = Vec::new();
    for e in tree.list(dir)? {
        // An entry that went away since the listing (a vacuum) is left out.
        let Ok(stat) = tree.stat(e.ino) else { continue };
        out.push(Shown {
            dir: stat.kind == Kind::Dir,
            size: (stat.kind == Kind::File && stat.exact_size).then_some(stat.size),
            mtime_ms: stat.mtime_ms,
            name: e.name,
            ino: e.ino,
        });
    }
    Ok(out)
}

/// `{"path": "/latest/", "entries": [{"name", "type", "size", "mtime_ms"}]}`.
pub fn json(path: &str, entries: &[Shown]) -> String {
    let list: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!({
                "name": e.name,
                "type": if e.dir { "dir" } else { "file" },
                "size": e.size,
                "mtime_ms": e.mtime_ms,
            })
        })
        .collect();
    let mut text =
        serde_json::to_string_pretty(&json!({ "path": path, "entries": list })).unwrap_or_default();
    text.push('\n');
    text
}

/// Files whose text is shown below the table of a folder that has them.
const SHOWN_INLINE: [&str; 2] = ["array.json", "schema.json"];
/// Up to this many bytes of each.
const INLINE_BYTES: u64 = 256 << 10;

/// An HTML page: a table of names (links), sizes and times, then the array's JSON.
pub fn html(tree: &dyn FileTree, path: &str, entries: &[Shown]) -> String {
    let title = escape(&format!("{}{}", tree.source(), path));
    let mut page = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\n\
         <style>body{{font-family:sans-serif;margin:1.5em}}td{{padding:0 1em}}\
         td.size{{text-align:right;font-family:monospace}}pre{{background:#f6f6f6;padding:1em;\
         overflow:auto}}</style></head>\n<body><h1>{title}</h1>\n<table>\n\
         <tr><th>Name</th><th>Size</th><th>Modified</th></tr>\n"
    );
    if path != "/" {
        page.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for e in entries {
        let slash = if e.dir { "/" } else { "" };
        let size = match (e.dir, e.size) {
            (true, _) => "-".to_string(),
            (false, Some(s)) => s.to_string(),
            (false, None) => "?".to_string(),
        };
        let modified = e.mtime_ms.map(super::file::http_date).unwrap_or_default();
        page.push_str(&format!(
            "<tr><td><a href=\"{}{slash}\">{}{slash}</a></td><td class=\"size\">{size}</td>\
             <td>{modified}</td></tr>\n",
            encode(&e.name),
            escape(&e.name),
        ));
    }
    page.push_str("</table>\n");
    for name in SHOWN_INLINE {
        let Some(e) = entries.iter().find(|e| e.name == name && !e.dir) else {
            continue;
        };
        let Ok(bytes) = tree.read_at(e.ino, 0, INLINE_BYTES) else {
            continue;
        };
        let text = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        page.push_str(&format!(
            "<h2><a href=\"{name}\">{name}</a></h2>\n<pre>{}</pre>\n",
            escape(&text)
        ));
    }
    page.push_str("</body></html>\n");
    page
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_in_text_and_encoded_in_links() {
        assert_eq!(escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
        let e = Shown {
            name: "a <b>".into(),
            ino: 2,
            dir: false,
            size: Some(3),
            mtime_ms: None,
        };
        let j: Value = serde_json::from_str(&json("/", &[e])).unwrap();
        assert_eq!(j["entries"][0]["name"], "a <b>");
        assert_eq!(j["entries"][0]["size"], 3);
    }
}
