//! The listings of the S3 API door (ListObjectsV2, ListObjects): the tree's files as keys
//! in S3's order, one page at a time.
//!
//! S3 lists keys in UTF-8 byte order; the tree lists a folder in its display order
//! (fragments by time, attributes by schema order). A folder's children are sorted here
//! by their name, with `/` appended to a folder's: then a depth-first walk yields every
//! key of the tree in byte order (a key below folder `d` starts with `d/`, and sorting by
//! `d/` puts the whole subtree where its keys belong among `d`'s siblings: `a.txt` <
//! `a/x` since `.` < `/`).
//!
//! A page never needs the whole walk: a listing resumes after a key (the continuation
//! token encodes the last key returned), and the walk skips every folder whose keys all
//! come at or before it, descending only along that key's path. With delimiter `/`, a
//! page reads one folder; every sub-folder is a common prefix (an empty folder too: a
//! tree folder is not a key, so it shows as what clients treat as a folder).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::listing::gone;
use crate::error::Result;
use crate::view::{FileTree, Ino, Kind, Listing, ROOT};

/// What a page shows, in key order: a file of the tree, or a common prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Object { key: String, ino: Ino },
    Prefix(String),
}

impl Item {
    pub fn key(&self) -> &str {
        match self {
            Item::Object { key, .. } => key,
            Item::Prefix(p) => p,
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<Item>,
    /// More items follow the last one of `items`.
    pub truncated: bool,
}

/// Keys the generic walk reads per step when it rolls keys up under a delimiter that
/// is not `/`.
const STEP: usize = 1000;

/// A folder's entries sorted by key (the name, with `/` after a folder's), from one
/// listing of it.
pub struct Sorted {
    listing: Listing,
    /// Entry indices of `listing`, in key order.
    order: Vec<usize>,
    /// The sort key of each entry in `order`.
    keys: Vec<String>,
}

impl Sorted {
    fn new(listing: Listing) -> Sorted {
        let mut pairs: Vec<(String, usize)> = listing
            .names()
            .enumerate()
            .map(|(i, (name, kind))| {
                let key = match kind {
                    Kind::Dir => format!("{name}/"),
                    Kind::File => name.to_string(),
                };
                (key, i)
            })
            .collect();
        pairs.sort_unstable();
        let (keys, order) = pairs.into_iter().unzip();
        Sorted {
            listing,
            order,
            keys,
        }
    }

    /// The first position whose key is after `key` (every key, without one).
    fn after(&self, key: Option<&str>) -> usize {
        key.map_or(0, |k| self.keys.partition_point(|x| x.as_str() <= k))
    }

    fn kind(&self, pos: usize) -> Kind {
        self.listing
            .name(self.order[pos])
            .map_or(Kind::File, |(_, k)| k)
    }

    /// The entry at sorted position `pos`, numbered now; `None` if it went away.
    fn number(&self, tree: &dyn FileTree, pos: usize) -> Result<Option<Ino>> {
        match tree.listed(&self.listing, self.order[pos]) {
            Ok(e) => Ok(Some(e.ino)),
            Err(e) if gone(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The sorted folders of recent pages, so that paging through a folder lists and sorts
/// it once, not once per page (which made 100,000 fragments take 20 s in pages of
/// 1,000, against 0.35 s for 10,000). A folder is listed again once the tree changed or
/// the kept listing is [`Folders::FRESH`] old: a paging client sees new keys within
/// that time, and positions never matter (pages resume after a key, not an index).
#[derive(Default)]
pub struct Folders {
    kept: Mutex<VecDeque<Kept>>,
}

struct Kept {
    /// The folder's keys' prefix (`""`, `fragments/`).
    folder: String,
    generation: u64,
    at: Instant,
    sorted: Arc<Sorted>,
}

impl Folders {
    /// Folders kept at once: a walk's path from the root and a few clients'.
    const KEPT: usize = 64;
    /// How long a kept listing serves later pages.
    pub const FRESH: Duration = Duration::from_secs(30);

    /// The folder `dir` (whose keys start with `folder`), sorted.
    fn sorted(&self, tree: &dyn FileTree, folder: &str, dir: Ino) -> Result<Arc<Sorted>> {
        let generation = tree.generation();
        {
            let mut kept = self.lock();
            kept.retain(|k| k.generation == generation && k.at.elapsed() < Self::FRESH);
            if let Some(k) = kept.iter().find(|k| k.folder == folder) {
                return Ok(k.sorted.clone());
            }
        }
        let sorted = Arc::new(Sorted::new(tree.listing(dir)?));
        let mut kept = self.lock();
        if kept.len() >= Self::KEPT {
            kept.pop_front();
        }
        kept.push_back(Kept {
            folder: folder.to_string(),
            generation: tree.generation(),
            at: Instant::now(),
            sorted: sorted.clone(),
        });
        Ok(sorted)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Kept>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many folders were listed since made (tests count them).
    pub fn kept(&self) -> usize {
        self.lock().len()
    }
}

/// The page of at most `max` items whose keys start with `prefix` and come after `after`,
/// rolled up at `delimiter` (after the prefix) into common prefixes.
pub fn page(
    tree: &dyn FileTree,
    folders: &Folders,
    prefix: &str,
    delimiter: Option<&str>,
    after: Option<&str>,
    max: usize,
) -> Result<Page> {
    let want = max.saturating_add(1);
    let mut items = match delimiter {
        None | Some("") => {
            let mut out = Vec::new();
            walk(tree, folders, ROOT, "", prefix, after, &mut out, want)?;
            out
        }
        Some("/") => one_folder(tree, folders, prefix, after, want)?,
        Some(d) => rolled_up(tree, folders, prefix, d, after, want)?,
    };
    let truncated = max > 0 && items.len() > max;
    items.truncate(max);
    Ok(Page { items, truncated })
}

/// Delimiter `/`: the entries of the folder the prefix names (up to its last `/`),
/// those whose names start with the rest.
fn one_folder(
    tree: &dyn FileTree,
    folders: &Folders,
    prefix: &str,
    after: Option<&str>,
    want: usize,
) -> Result<Vec<Item>> {
    let (folder, start) = match prefix.rfind('/') {
        Some(i) => prefix.split_at(i + 1),
        None => ("", prefix),
    };
    let Some(dir) = folder_of(tree, folder)? else {
        return Ok(Vec::new());
    };
    let sorted = folders.sorted(tree, folder, dir)?;
    // Keys with the prefix are contiguous; those at or before `after` are skipped.
    let first_with_prefix = sorted.keys.partition_point(|k| k.as_str() < start);
    let first_after = after
        .and_then(|a| a.strip_prefix(folder))
        .map_or(0, |rest| sorted.after(Some(rest)));
    let skip_all = after.is_some_and(|a| !a.starts_with(folder) && a > folder);
    let mut out = Vec::new();
    if skip_all {
        return Ok(out);
    }
    for pos in first_with_prefix.max(first_after)..sorted.keys.len() {
        if out.len() >= want {
            break;
        }
        let sort_key = &sorted.keys[pos];
        if !sort_key.starts_with(start) {
            break;
        }
        let key = format!("{folder}{sort_key}");
        match sorted.kind(pos) {
            Kind::Dir => out.push(Item::Prefix(key)),
            Kind::File => {
                if let Some(ino) = sorted.number(tree, pos)? {
                    out.push(Item::Object { key, ino });
                }
            }
        }
    }
    Ok(out)
}

/// Depth first from folder `dir` (whose keys start with `base`), in key order: the files
/// whose keys start with `prefix` and come after `after`, until `out` holds `want`.
#[allow(clippy::too_many_arguments)]
fn walk(
    tree: &dyn FileTree,
    folders: &Folders,
    dir: Ino,
    base: &str,
    prefix: &str,
    after: Option<&str>,
    out: &mut Vec<Item>,
    want: usize,
) -> Result<()> {
    // Only keys with the prefix: all of this folder's (its keys start with the prefix),
    // or those starting with the prefix's rest here, which sort together (and the one
    // folder the rest may lie inside, just before them).
    let rest_of_prefix = match prefix.strip_prefix(base) {
        Some(rest) => rest,
        None if base.starts_with(prefix) => "",
        None => return Ok(()),
    };
    let sorted = folders.sorted(tree, base, dir)?;
    let mut from = sorted.keys.partition_point(|k| k.as_str() < rest_of_prefix);
    if from > 0
        && sorted.kind(from - 1) == Kind::Dir
        && rest_of_prefix.starts_with(sorted.keys[from - 1].as_str())
    {
        from -= 1;
    }
    // Where `after` falls in this folder: entries before it are skipped, but a folder
    // whose keys `after` lies among is walked into.
    if let Some(a) = after {
        match a.strip_prefix(base) {
            Some(rest) => {
                let mut at = sorted.after(Some(rest));
                if at > 0
                    && sorted.kind(at - 1) == Kind::Dir
                    && rest.starts_with(sorted.keys[at - 1].as_str())
                {
                    at -= 1;
                }
                from = from.max(at);
            }
            None if a > base => return Ok(()),
            None => {}
        }
    }
    for pos in from..sorted.keys.len() {
        if out.len() >= want {
            return Ok(());
        }
        let sort_key = &sorted.keys[pos];
        let inside = rest_of_prefix.starts_with(sort_key.as_str());
        if !sort_key.starts_with(rest_of_prefix) && !inside {
            return Ok(()); // past the keys with the prefix
        }
        let key = format!("{base}{sort_key}");
        match sorted.kind(pos) {
            Kind::Dir => {
                let Some(ino) = sorted.number(tree, pos)? else {
                    continue;
                };
                match walk(tree, folders, ino, &key, prefix, after, out, want) {
                    Ok(()) => {}
                    // Gone since the listing (a vacuum): as if it never was.
                    Err(e) if gone(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            Kind::File => {
                if sort_key.starts_with(rest_of_prefix) && after.is_none_or(|a| key.as_str() > a) {
                    if let Some(ino) = sorted.number(tree, pos)? {
                        out.push(Item::Object { key, ino });
                    }
                }
            }
        }
    }
    Ok(())
}

/// A delimiter other than `/`: the walk's keys, each with the delimiter after the prefix
/// rolled up into the common prefix that ends with it (read `STEP` keys at a time).
fn rolled_up(
    tree: &dyn FileTree,
    folders: &Folders,
    prefix: &str,
    delimiter: &str,
    after: Option<&str>,
    want: usize,
) -> Result<Vec<Item>> {
    let mut out: Vec<Item> = Vec::new();
    let mut from = after.map(str::to_string);
    loop {
        let mut keys = Vec::new();
        walk(
            tree,
            folders,
            ROOT,
            "",
            prefix,
            from.as_deref(),
            &mut keys,
            STEP,
        )?;
        let Some(last) = keys.last() else {
            return Ok(out);
        };
        from = Some(last.key().to_string());
        let more = keys.len() == STEP;
        for item in keys {
            if out.len() >= want {
                return Ok(out);
            }
            let rest = &item.key()[prefix.len()..];
            let Some(i) = rest.find(delimiter) else {
                out.push(item);
                continue;
            };
            let common = &item.key()[..prefix.len() + i + delimiter.len()];
            if after.is_some_and(|a| common <= a)
                || matches!(out.last(), Some(Item::Prefix(p)) if p == common)
            {
                continue;
            }
            out.push(Item::Prefix(common.to_string()));
        }
        if !more {
            return Ok(out);
        }
    }
}

/// The folder of keys starting with `folder` (empty, or ending in `/`); `None` when no
/// such folder exists.
fn folder_of(tree: &dyn FileTree, folder: &str) -> Result<Option<Ino>> {
    // "a//b": no folder has an empty name.
    if folder.contains("//") || folder.starts_with('/') {
        return Ok(None);
    }
    let mut ino = ROOT;
    for name in folder.split('/').filter(|n| !n.is_empty()) {
        if !plain_name(name) {
            return Ok(None);
        }
        match tree.lookup(ino, name) {
            Ok(e) if e.kind == Kind::Dir => ino = e.ino,
            Ok(_) => return Ok(None),
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(Some(ino))
}

/// A name a key may hold as one of its `/`-separated parts.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('\0')
}

/// The continuation token of a page that ends with `key`: the key in hex, so that it
/// resumes the walk without anything kept on the server.
pub fn token(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The key a continuation token resumes after; `None` if it is not one of ours.
pub fn untoken(token: &str) -> Option<String> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    // Two hex digits a byte, nothing else (`from_str_radix` would take a sign too: `+f`).
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes: Option<Vec<u8>> = token
        .as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::view::Info;
    use crate::view::{Entry, Lifetime, Stat};

    /// A tree of paths (a trailing `/` makes a folder), listed in reverse order to show
    /// that the listing sorts.
    struct Paths(Vec<String>);

    impl Paths {
        fn new(paths: &[&str]) -> Paths {
            let mut all: Vec<String> = Vec::new();
            for p in paths {
                let mut at = 0;
                while let Some(i) = p[at..].find('/') {
                    let dir = &p[..at + i + 1];
                    if !all.iter().any(|a| a == dir) {
                        all.push(dir.to_string());
                    }
                    at += i + 1;
                }
                if !all.iter().any(|a| a == p) {
                    all.push(p.to_string());
                }
            }
            Paths(all)
        }
        /// Inode n+2 is path n; the root is 1.
        fn path(&self, ino: Ino) -> &str {
            if ino == ROOT {
                ""
            } else {
                &self.0[(ino - 2) as usize]
            }
        }
    }

    impl FileTree for Paths {
        fn list(&self, dir: Ino) -> Result<Vec<Entry>> {
            let base = self.path(dir).to_string();
            let mut out: Vec<Entry> = Vec::new();
            for (i, p) in self.0.iter().enumerate() {
                let Some(rest) = p.strip_prefix(&base) else {
                    continue;
                };
                let name = rest.trim_end_matches('/');
                if name.is_empty() || name.contains('/') {
                    continue;
                }
                out.push(Entry {
                    name: name.to_string(),
                    ino: i as Ino + 2,
                    kind: if rest.ends_with('/') {
                        Kind::Dir
                    } else {
                        Kind::File
                    },
                });
            }
            out.reverse();
            Ok(out)
        }
        fn lookup(&self, parent: Ino, name: &str) -> Result<Entry> {
            self.list(parent)?
                .into_iter()
                .find(|e| e.name == name)
                .ok_or_else(|| Error::NotFound(name.to_string()))
        }
        fn stat(&self, _ino: Ino) -> Result<Stat> {
            unimplemented!()
        }
        fn size(&self, _ino: Ino) -> Result<u64> {
            Ok(0)
        }
        fn read_into(&self, _: Ino, _: u64, _: u64, _: &mut Vec<u8>) -> Result<()> {
            Ok(())
        }
        fn parent(&self, _ino: Ino) -> Result<Ino> {
            Ok(ROOT)
        }
        fn lifetime(&self, _ino: Ino) -> Lifetime {
            Lifetime::Immutable
        }
        fn generation(&self) -> u64 {
            0
        }
        fn source(&self) -> String {
            String::new()
        }
        fn entry_count(&self) -> u64 {
            0
        }
        fn info(&self) -> Result<Info> {
            Err(Error::NotFound("info".into()))
        }
    }

    const PATHS: [&str; 9] = [
        "a.txt",
        "a/x",
        "a/y/z",
        "a-b",
        "b/",
        "latest/a/values.bin",
        "latest/a.b/values.bin",
        "latest/cells.csv",
        "é",
    ];

    fn page(
        tree: &dyn FileTree,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max: usize,
    ) -> Result<Page> {
        super::page(tree, &Folders::default(), prefix, delimiter, after, max)
    }

    fn keys(page: &Page) -> Vec<&str> {
        page.items.iter().map(Item::key).collect()
    }

    /// Every page of a listing, resumed after the last key of each.
    fn all_pages(tree: &Paths, prefix: &str, delimiter: Option<&str>, max: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..100 {
            let p = page(tree, prefix, delimiter, after.as_deref(), max).unwrap();
            assert!(p.items.len() <= max);
            out.extend(p.items.iter().map(|i| i.key().to_string()));
            if !p.truncated {
                return out;
            }
            after = p.items.last().map(|i| i.key().to_string());
        }
        panic!("no end");
    }

    #[test]
    fn keys_come_in_byte_order_page_by_page() {
        let tree = Paths::new(&PATHS);
        let mut expected: Vec<&str> = PATHS
            .iter()
            .copied()
            .filter(|p| !p.ends_with('/'))
            .collect();
        expected.sort();
        for max in [1, 2, 3, 1000] {
            assert_eq!(all_pages(&tree, "", None, max), expected, "max {max}");
        }
        assert_eq!(
            all_pages(&tree, "latest/a", None, 1),
            ["latest/a.b/values.bin", "latest/a/values.bin"]
        );
        assert_eq!(all_pages(&tree, "a/y/z", None, 1), ["a/y/z"]);
        assert!(all_pages(&tree, "nothing", None, 5).is_empty());
    }

    #[test]
    fn delimiter_shows_one_folder() {
        let tree = Paths::new(&PATHS);
        assert_eq!(
            all_pages(&tree, "", Some("/"), 1000),
            ["a-b", "a.txt", "a/", "b/", "latest/", "é"]
        );
        for max in [1, 2, 1000] {
            assert_eq!(
                all_pages(&tree, "latest/", Some("/"), max),
                ["latest/a.b/", "latest/a/", "latest/cells.csv"]
            );
        }
        assert_eq!(
            all_pages(&tree, "latest/c", Some("/"), 1000),
            ["latest/cells.csv"]
        );
        assert!(all_pages(&tree, "a.txt/", Some("/"), 1000).is_empty());
        assert!(all_pages(&tree, "zz/", Some("/"), 1000).is_empty());
        assert!(all_pages(&tree, "a//", Some("/"), 1000).is_empty());
        // Another delimiter rolls up the walk's keys.
        let dotted = [
            "a-b",
            "a.",
            "a/x",
            "a/y/z",
            "latest/a.",
            "latest/a/values.",
            "latest/cells.",
            "é",
        ];
        for max in [1, 1000] {
            assert_eq!(all_pages(&tree, "", Some("."), max), dotted);
        }
    }

    #[test]
    fn start_after_and_empty_pages() {
        let tree = Paths::new(&PATHS);
        let p = page(&tree, "", None, Some("a/x"), 2).unwrap();
        assert_eq!(keys(&p), ["a/y/z", "latest/a.b/values.bin"]);
        assert!(p.truncated);
        let p = page(&tree, "", Some("/"), Some("a/"), 1000).unwrap();
        assert_eq!(keys(&p), ["b/", "latest/", "é"]);
        let p = page(&tree, "", None, None, 0).unwrap();
        assert!(p.items.is_empty() && !p.truncated);
    }

    #[test]
    fn tokens_round_trip() {
        for k in ["", "latest/a/values.bin", "é/ü x"] {
            assert_eq!(untoken(&token(k)).as_deref(), Some(k));
        }
        assert_eq!(untoken("zz"), None);
        assert_eq!(untoken("abc"), None);
        assert_eq!(untoken("ff"), None);
        assert_eq!(untoken("+f"), None, "a sign is no hex digit");
    }
}
