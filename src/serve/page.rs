//! The HTTP door's folder page: what a person opening `http://host:8080/` in a browser
//! reads, with no JavaScript (a request whose `Accept` names `text/html`; other clients
//! get [`plain`], whose only links are the folder's entries, as the scrapers of
//! directory listings need). Above the folder's files: where it has them, the picture
//! of the fragments (`fragments.svg`), the quick looks of its fields (`values.png`), the
//! schema as tables and the fragments as a sortable table (an array's root), and per
//! field a row of links to each of its files (a fragment's or a state's folder). The
//! files table follows, streamed page by page ([`super::listing`]).
//!
//! The page names the served tree by its last name only (`weather`, not
//! `/srv/data/weather`): where the server keeps its files is none of a visitor's
//! business. What it shows of the JSON files it reads through the tree, within a bound
//! each, so a large array's page stays small.

use std::sync::Arc;

use super::html::{escape, short_name};
use super::listing::{stream, Pages, Shown};
use super::page_tables::{self, Sort};
use crate::view::{Entry, FileTree, Kind, Listing};
use crate::wire::path::encode;

/// `schema.json` is shown as tables up to this size.
const SCHEMA_BYTES: u64 = 4 << 20;
/// `array.json` is shown as the fragments table up to this size (about 30,000
/// fragments); past it the page says so and links the file.
const ARRAY_BYTES: u64 = 16 << 20;
/// Field folders whose files and quick looks a page shows at most.
const MAX_FIELDS: usize = 256;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:1200px;color:#222}\
h1 a{text-decoration:none}\
table.grid,table.facts{border-collapse:collapse;margin:.5em 0 1em}\
table.grid td,table.grid th,table.facts td,table.facts th{border:1px solid #ccc;\
padding:.2em .6em;text-align:left;vertical-align:top}\
table.facts th{background:#f4f4f4}\
table.grid th{background:#f4f4f4}\
td.num{text-align:right;font-family:monospace}\
td{padding:0 1em}\
td.size{text-align:right;font-family:monospace}\
td.faces a{margin-right:.8em}\
img.picture{max-width:100%;height:auto;border:1px solid #ddd}\
img.look{image-rendering:pixelated;min-width:192px;max-width:100%;height:auto;\
border:1px solid #ddd}\
figure{display:inline-block;margin:0 1.5em 1em 0;vertical-align:top}\
figcaption{font-size:90%;color:#444;max-width:60em}";

/// The page of the folder at `path` (`/latest/`, percent-encoded as asked), its files
/// `listing`, its fragments table sorted as `query` asks (`?sort=cells&order=desc`):
/// for browsers.
pub fn html(
    tree: Arc<dyn FileTree>,
    listing: Arc<Listing>,
    path: &str,
    query: Option<&str>,
) -> Pages {
    let head = head(&*tree, &listing, path, query);
    files(tree, listing, head)
}

/// The folder's entries alone, each a link (and `../`), with their sizes and times:
/// for clients that read an HTML listing as a directory's (fsspec, GDAL's `/vsicurl/`,
/// rclone, wget), which take every link of a page for an entry.
pub fn plain(tree: Arc<dyn FileTree>, listing: Arc<Listing>, path: &str) -> Pages {
    let name = short_name(&tree.source());
    let shown = escape(&format!(
        "{name}{}",
        crate::wire::path::decode(path).unwrap_or_else(|_| path.to_string())
    ));
    let mut head = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{shown}</title></head>\n\
         <body><h1>{shown}</h1>\n<table>\n<tr><th>Name</th><th>Size</th><th>Modified</th></tr>\n"
    );
    if path != "/" {
        head.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    files(tree, listing, head)
}

/// `head`, then the files table's rows, streamed, then the end of the page.
fn files(tree: Arc<dyn FileTree>, listing: Arc<Listing>, head: String) -> Pages {
    let render = |_: &dyn FileTree, shown: &[Shown], _: usize| {
        let mut out = String::new();
        for e in shown {
            let slash = if e.dir { "/" } else { "" };
            let size = match (e.dir, e.size) {
                (true, _) => "-".to_string(),
                (false, Some(s)) => s.to_string(),
                (false, None) => "?".to_string(),
            };
            let modified = e.mtime_ms.map(super::file::http_date).unwrap_or_default();
            out.push_str(&format!(
                "<tr><td><a href=\"{}{slash}\">{}{slash}</a></td><td class=\"size\">{size}</td>\
                 <td>{modified}</td></tr>\n",
                encode(&e.name),
                escape(&e.name),
            ));
        }
        out
    };
    stream(
        tree,
        listing,
        None,
        head,
        render,
        "</table>\n</body></html>\n".into(),
    )
}

/// A file or folder of the listing by name.
fn entry(tree: &dyn FileTree, listing: &Listing, name: &str, kind: Kind) -> Option<Entry> {
    let i = listing.names().position(|(n, k)| n == name && k == kind)?;
    tree.listed(listing, i).ok()
}

/// A small JSON file of the listing, parsed, if it is at most `limit` bytes.
fn small_json(
    tree: &dyn FileTree,
    listing: &Listing,
    name: &str,
    limit: u64,
) -> Result<Option<serde_json::Value>, u64> {
    let Some(e) = entry(tree, listing, name, Kind::File) else {
        return Ok(None);
    };
    let size = tree.size(e.ino).unwrap_or(u64::MAX);
    if size > limit {
        return Err(size);
    }
    Ok(tree
        .read_at(e.ino, 0, size)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok()))
}

/// Everything above the files table.
fn head(tree: &dyn FileTree, listing: &Listing, path: &str, query: Option<&str>) -> String {
    let name = short_name(&tree.source());
    let mut o = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title>\n<style>{STYLE}</style></head>\n<body>\n<h1>{}</h1>\n",
        escape(&format!(
            "{name}{}",
            crate::wire::path::decode(path).unwrap_or_else(|_| path.to_string())
        )),
        crumbs(&name, path)
    );
    let has = |n: &str| listing.names().any(|(x, k)| x == n && k == Kind::File);
    if has("fragments.svg") {
        o.push_str(&format!(
            "<h2 id=\"picture\">Fragments in space and time</h2>\n<figure><a href=\"fragments.svg\">\
             <img class=\"picture\" src=\"fragments.svg\" alt=\"Where each fragment of {} lies in \
             its domain, and when it was written\"></a>\n<figcaption>Each fragment where its \
             non-empty domain lies, coloured by when it was written (older dark, newer light); \
             hidden ones (replaced by a consolidation, or written later) as outlines; the time \
             strip below; made from metadata alone. <a href=\"fragments.svg\">Open the \
             picture</a> for each shape's name, timestamps, domain, cells and size.\
             </figcaption></figure>\n",
            escape(&name)
        ));
    }
    if has("values.png") {
        o.push_str(
            "<h2 id=\"look\">Quick look</h2>\n<figure><a href=\"values.png\"><img class=\"look\" \
             src=\"values.png\" alt=\"values.bin, colour-mapped\"></a>\n<figcaption>",
        );
        o.push_str(LOOK_CAPTION);
        o.push_str("</figcaption></figure>\n");
    }
    if has("read.json") || has("footer.json") {
        o.push_str(&fields(tree, listing));
    }
    match small_json(tree, listing, "schema.json", SCHEMA_BYTES) {
        Ok(Some(schema)) => o.push_str(&page_tables::schema(&schema)),
        Ok(None) => {}
        Err(size) => o.push_str(&format!(
            "<p><a href=\"schema.json\">schema.json</a> ({size} bytes) is too large to show \
             here.</p>\n"
        )),
    }
    match small_json(tree, listing, "array.json", ARRAY_BYTES) {
        Ok(Some(array)) => {
            o.push_str(&page_tables::fragments(&array, Sort::parse(query).as_ref()))
        }
        Ok(None) => {}
        Err(size) => o.push_str(&format!(
            "<h2 id=\"fragments\">Fragments</h2>\n<p>Too many to tabulate here: \
             <a href=\"array.json\">array.json</a> ({size} bytes) lists them, and \
             <a href=\"fragments/\">fragments/</a> holds them.</p>\n"
        )),
    }
    o.push_str(
        "<h2 id=\"files\">Files</h2>\n<table class=\"files\">\n\
         <tr><th>Name</th><th>Size</th><th>Modified</th></tr>\n",
    );
    if path != "/" {
        o.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    o
}

const LOOK_CAPTION: &str = "Colour-mapped with viridis, the lowest value sampled dark, \
    the highest light; fill values and NaN transparent, nulls grey; at most 1024 pixels a \
    side, every n-th row and column (the file's text chunks say which, the range and the \
    shape).";

/// `name / latest / temperature`, each part but the last a link up.
fn crumbs(name: &str, path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let up = |levels: usize| "../".repeat(levels);
    if parts.is_empty() {
        return escape(name);
    }
    let mut o = format!("<a href=\"{}\">{}</a>", up(parts.len()), escape(name));
    for (i, p) in parts.iter().enumerate() {
        let shown = escape(&crate::wire::path::decode(p).unwrap_or_else(|_| p.to_string()));
        if i + 1 == parts.len() {
            o.push_str(&format!(" / {shown}"));
        } else {
            o.push_str(&format!(
                " / <a href=\"{}\">{shown}</a>",
                up(parts.len() - 1 - i)
            ));
        }
    }
    o
}

/// A fragment's or a state's fields: their quick looks, then a row each with a link to
/// every file of the field's folder.
fn fields(tree: &dyn FileTree, listing: &Listing) -> String {
    let mut looks = String::new();
    let mut rows = String::new();
    let folders: Vec<usize> = listing
        .names()
        .enumerate()
        .filter(|(_, (n, k))| *k == Kind::Dir && *n != "zarr")
        .map(|(i, _)| i)
        .take(MAX_FIELDS)
        .collect();
    for i in folders {
        let Ok(field) = tree.listed(listing, i) else {
            continue;
        };
        let Ok(files) = tree.list(field.ino) else {
            continue;
        };
        let href = encode(&field.name);
        let shown = escape(&field.name);
        let links: Vec<String> = files
            .iter()
            .map(|f| {
                let slash = if f.is_dir() { "/" } else { "" };
                format!(
                    "<a href=\"{href}/{}{slash}\">{}{slash}</a>",
                    encode(&f.name),
                    escape(&f.name)
                )
            })
            .collect();
        rows.push_str(&format!(
            "<tr><td><a href=\"{href}/\">{shown}/</a></td><td class=\"faces\">{}</td></tr>\n",
            links.join(" ")
        ));
        if files.iter().any(|f| f.name == "values.png" && !f.is_dir()) {
            looks.push_str(&format!(
                "<figure><a href=\"{href}/values.png\"><img class=\"look\" \
                 src=\"{href}/values.png\" alt=\"{shown}, colour-mapped\"></a>\
                 <figcaption>{shown}</figcaption></figure>\n"
            ));
        }
    }
    let mut o = String::new();
    if !looks.is_empty() {
        o.push_str("<h2 id=\"looks\">Quick looks</h2>\n");
        o.push_str(&looks);
        o.push_str(&format!("<p class=\"note\">{LOOK_CAPTION}</p>\n"));
    }
    if !rows.is_empty() {
        o.push_str(
            "<h2 id=\"fields\">Fields</h2>\n<table class=\"grid\">\n<tr><th>Field</th>\
             <th>Files</th></tr>\n",
        );
        o.push_str(&rows);
        o.push_str("</table>\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crumbs_link_up_the_path() {
        assert_eq!(crumbs("weather", "/"), "weather");
        assert_eq!(
            crumbs("weather", "/latest/temp%2Fk/"),
            "<a href=\"../../\">weather</a> / <a href=\"../\">latest</a> / temp/k"
        );
    }
}
