//! The house rules of `src/`, checked from the source (`docs/DESIGN.md`, "Layers"):
//!
//! - **Layers**: each top-level module imports only the modules below it, as [`LAYERS`]
//!   says (the same table as DESIGN.md's): data flows one way, from `storage/` to the edges.
//! - **No circles**: no file imports a file that imports it back, directly or around a
//!   loop. A `mod.rs` whose children use its items is such a loop; it stays an index
//!   (module lines, `pub use` re-exports, its doc) and the items live in named files.
//! - **Short files**: no file is over [`MAX_LINES`] lines before its `#[cfg(test)]` tests.
//!
//! An import is a path the file names: `use crate::a::b::C`, `super::x`, `self::y`, a
//! path through a child module it declares, or an inline `crate::a::f()`. A path through
//! a `pub use` re-export counts as an import of the file that defines the item. Method
//! calls name no path: a child that calls a method of an `impl ArrayTree` block in
//! another file imports nothing by this rule (the struct's file is what it imports).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What each top-level module of `src/` may import (besides itself and std/crates).
/// Lowest first. `error` wraps the parsers' own error types, so it sits above them.
const LAYERS: &[(&str, &[&str])] = &[
    // Pure parsers over byte slices: no I/O, nothing of the crate.
    ("format", &[]),
    ("filo", &[]),
    ("filter", &["format"]),
    // The crate's error: every errno, wrapping the parsers' errors.
    ("error", &["format", "filo", "filter"]),
    // Sans-IO writers of file formats (netCDF, HDF5, TIFF, npy, ENVI, Zarr metadata).
    ("encode", &["error", "format"]),
    // Small shared pieces: the bounded LRU, once-cells, secrets, the daemon's plumbing.
    ("cache", &["error"]),
    ("lazy", &["error"]),
    ("secret", &["error"]),
    ("daemon", &["error"]),
    // The doors' request parsers, sans-IO.
    ("wire", &["error"]),
    // Bytes: local folders, S3, the disk cache, scratch files.
    ("storage", &["error", "format", "cache", "lazy"]),
    // Arrays and groups: schemas, live fragments, metadata.
    (
        "array",
        &["error", "format", "filter", "storage", "cache", "lazy"],
    ),
    // Fragments to bytes and cells, and their merge.
    (
        "read",
        &[
            "error", "format", "filter", "array", "storage", "cache", "lazy",
        ],
    ),
    // The trees of files.
    (
        "view",
        &[
            "error", "format", "filo", "filter", "encode", "array", "read", "storage", "cache",
            "lazy",
        ],
    ),
    // The edges: the tree and their own plumbing. (`serve` names `array` and `storage`
    // only for the options it opens its source with: OpenOptions, S3Options, CacheConfig.)
    ("fuse", &["error", "view", "daemon"]),
    (
        "serve",
        &[
            "error", "view", "wire", "secret", "daemon", "storage", "array",
        ],
    ),
    (
        "mount",
        &["error", "view", "fuse", "daemon", "storage", "array"],
    ),
    ("ls", &["error", "view"]),
    ("info", &["error", "view", "array", "format"]),
    (
        "cli",
        &[
            "error", "view", "fuse", "mount", "serve", "daemon", "storage", "array", "format",
            "filo", "secret", "ls", "info", "wire",
        ],
    ),
];

/// The longest a file of `src/` may be before its tests.
const MAX_LINES: usize = 800;

/// Files whose imports are not checked against the layers: the crate root and the test
/// helpers of unit tests.
const UNLAYERED: &[&str] = &["lib", "main", "test_support"];

struct Source {
    /// Module path: `["view", "tiledb", "node"]`; `mod.rs` and `lib.rs` name their folder.
    module: Vec<String>,
    /// The text before its tests, comments and string literals blanked.
    code: String,
    /// Lines before `#[cfg(test)]`.
    lines_before_tests: usize,
}

fn sources() -> BTreeMap<PathBuf, Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let rel = path.strip_prefix(&root).unwrap().with_extension("");
                let mut module: Vec<String> = rel
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    module.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) && module.len() > 1
                    || module == ["lib"]
                {
                    module.pop();
                }
                let before = before_tests(&text);
                out.insert(
                    path.strip_prefix(root.parent().unwrap())
                        .unwrap()
                        .to_path_buf(),
                    Source {
                        module,
                        lines_before_tests: before.lines().count(),
                        code: blank(before),
                    },
                );
            }
        }
    }
    out
}

/// The text before the file's unit tests.
fn before_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// Comments and string literals blanked, and `pub(in path)` shortened to `pub`: what is
/// left names only paths the code uses.
fn blank(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                out.push_str("\"\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    match (escaped, c) {
                        (false, '\\') => escaped = true,
                        (false, '"') => break,
                        _ => escaped = false,
                    }
                }
            }
            // A char literal holding a quote: '"'.
            '\'' if chars.clone().take(2).collect::<String>() == "\"'" => {
                chars.next();
                chars.next();
                out.push_str("' '");
            }
            c => out.push(c),
        }
    }
    let mut s = out;
    while let Some(i) = s.find("pub(in ") {
        let end = s[i..].find(')').map_or(s.len(), |j| i + j + 1);
        s.replace_range(i..end, "pub");
    }
    s
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The child modules a file declares (`mod x;`, `pub mod x;`, `mod x {`).
fn child_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("mod ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(is_ident) {
            continue;
        }
        let name: String = after.chars().take_while(|&c| is_ident(c)).collect();
        let tail = after[name.len()..].trim_start();
        if !name.is_empty() && (tail.starts_with(';') || tail.starts_with('{')) {
            out.insert(name);
        }
    }
    out
}

/// One path a file names, absolute from the crate root, and whether it is a `pub use`.
struct Named {
    path: Vec<String>,
    reexport: bool,
}

/// Every crate path `code` (of module `module`) names.
fn named_paths(module: &[String], code: &str) -> Vec<Named> {
    let children = child_modules(code);
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident_start(chars[i]) || (i > 0 && (is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let head: String = chars[start..i].iter().collect();
        let is_head =
            matches!(head.as_str(), "crate" | "super" | "self") || children.contains(&head);
        if !is_head || !starts_with(&chars, i, "::") {
            continue;
        }
        let reexport = preceded_by_pub_use(&chars, start);
        let (segments, group, end) = path_at(&chars, i);
        i = end;
        let mut base: Vec<String> = match head.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            child => {
                let mut m = module.to_vec();
                m.push(child.to_string());
                m
            }
        };
        let mut segments = segments.into_iter().peekable();
        while segments.peek().is_some_and(|s| s == "super") {
            segments.next();
            base.pop();
        }
        base.extend(segments);
        match group {
            Some(items) => {
                for item in items {
                    let mut p = base.clone();
                    if item != "self" {
                        p.push(item);
                    }
                    out.push(Named { path: p, reexport });
                }
            }
            None => out.push(Named {
                path: base,
                reexport,
            }),
        }
    }
    out
}

fn starts_with(chars: &[char], i: usize, s: &str) -> bool {
    s.chars()
        .enumerate()
        .all(|(k, c)| chars.get(i + k) == Some(&c))
}

/// Whether the path starting at `start` follows `pub use` (or `pub(...) use`).
fn preceded_by_pub_use(chars: &[char], start: usize) -> bool {
    let before: String = chars[start.saturating_sub(40)..start].iter().collect();
    let before = before.trim_end();
    let Some(rest) = before.strip_suffix("use") else {
        return false;
    };
    let rest = rest.trim_end();
    rest.ends_with("pub") || rest.ends_with(')') && rest.contains("pub(")
}

/// The segments of the path after its head (at `i`, on `::`), the items of a final
/// `{...}` group (first segment of each), and where the path ends.
fn path_at(chars: &[char], mut i: usize) -> (Vec<String>, Option<Vec<String>>, usize) {
    let mut segments = Vec::new();
    loop {
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if !starts_with(chars, j, "::") {
            return (segments, None, i);
        }
        j += 2;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        match chars.get(j) {
            Some('{') => {
                let mut depth = 0;
                let mut k = j;
                let mut items = Vec::new();
                let mut current = String::new();
                let mut at_item_start = true;
                while k < chars.len() {
                    let c = chars[k];
                    match c {
                        '{' => {
                            depth += 1;
                            at_item_start = true;
                        }
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                if !current.is_empty() {
                                    items.push(std::mem::take(&mut current));
                                }
                                return (segments, Some(items), k + 1);
                            }
                        }
                        ',' if depth == 1 => {
                            if !current.is_empty() {
                                items.push(std::mem::take(&mut current));
                            }
                            at_item_start = true;
                        }
                        c if depth == 1 && at_item_start && is_ident(c) => current.push(c),
                        c if depth == 1 && !current.is_empty() && !is_ident(c) => {
                            at_item_start = false
                        }
                        _ => {}
                    }
                    k += 1;
                }
                return (segments, Some(items), k);
            }
            Some('*') => return (segments, None, j + 1),
            Some(&c) if is_ident_start(c) => {
                let s = j;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                segments.push(chars[s..j].iter().collect());
                i = j;
            }
            _ => return (segments, None, i),
        }
    }
}

/// The import graph between files: file -> the files it names.
struct Graph {
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

fn graph(sources: &BTreeMap<PathBuf, Source>) -> Graph {
    let by_module: HashMap<Vec<String>, PathBuf> = sources
        .iter()
        .map(|(p, s)| (s.module.clone(), p.clone()))
        .collect();
    let named: BTreeMap<&PathBuf, Vec<Named>> = sources
        .iter()
        .map(|(p, s)| (p, named_paths(&s.module, &s.code)))
        .collect();
    // Per file, what its `pub use`s re-export: the item's name -> its full path.
    let reexports: HashMap<&PathBuf, HashMap<String, Vec<String>>> = named
        .iter()
        .map(|(p, names)| {
            let map = names
                .iter()
                .filter(|n| n.reexport)
                .filter_map(|n| Some((n.path.last()?.clone(), n.path.clone())))
                .collect();
            (*p, map)
        })
        .collect();
    let resolve = |path: &[String]| -> Option<PathBuf> {
        let mut path = path.to_vec();
        for _ in 0..10 {
            let (len, file) = (1..=path.len())
                .rev()
                .find_map(|k| by_module.get(&path[..k]).map(|f| (k, f)))?;
            let through = path
                .get(len)
                .and_then(|item| reexports.get(file)?.get(item))
                .filter(|target| **target != path);
            match through {
                Some(target) => path = target.clone(),
                None => return Some(file.clone()),
            }
        }
        None
    };
    let mut edges = BTreeMap::new();
    for (file, names) in &named {
        let targets: BTreeSet<PathBuf> = names
            .iter()
            .filter_map(|n| resolve(&n.path))
            .filter(|t| t != *file)
            .collect();
        edges.insert((*file).clone(), targets);
    }
    Graph { edges }
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn circles(g: &Graph) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        g: &'a Graph,
        index: HashMap<&'a PathBuf, usize>,
        low: HashMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.g.edges[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        g,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let sources = sources();
    let g = graph(&sources);
    let found = circles(&g);
    let mut report = String::new();
    for component in &found {
        report.push_str("a circle between:\n");
        for file in component {
            let inside: Vec<String> = g.edges[file]
                .iter()
                .filter(|t| component.contains(t))
                .map(|t| t.display().to_string())
                .collect();
            report.push_str(&format!("  {} -> {}\n", file.display(), inside.join(", ")));
        }
    }
    assert!(found.is_empty(), "{report}");
}

/// The top-level module a file is in (`lib` for the crate root).
fn layer_of(source: &Source) -> &str {
    source.module.first().map_or("lib", String::as_str)
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let sources = sources();
    let g = graph(&sources);
    let allowed: HashMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut wrong = Vec::new();
    for (file, targets) in &g.edges {
        let layer = layer_of(&sources[file]);
        if UNLAYERED.contains(&layer) {
            continue;
        }
        let Some(may) = allowed.get(layer) else {
            wrong.push(format!(
                "{}: its module `{layer}` is not in LAYERS",
                file.display()
            ));
            continue;
        };
        for target in targets {
            let to = layer_of(&sources[target]);
            if to != layer && !may.contains(&to) {
                wrong.push(format!(
                    "{} imports {} (`{layer}` may import only {may:?})",
                    file.display(),
                    target.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_file_is_longer_than_the_limit_before_its_tests() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|(_, s)| s.lines_before_tests > MAX_LINES)
        .map(|(p, s)| format!("{}: {} lines", p.display(), s.lines_before_tests))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines before the tests:\n{}",
        long.join("\n")
    );
}

/// The checker itself: it sees `use` groups, re-exports, `super::`, child modules and
/// inline paths, and a circle through a `mod.rs` that defines what its children use.
#[test]
fn the_checker_finds_what_it_must() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Vec<_>>();
    let code = blank(
        "mod child;\npub use child::Thing;\nuse crate::a::{b, c::D, self};\n\
         use super::super::x::Y;\nfn f() { crate::q::r(); let s = \"crate::not::this\"; }\n\
         // crate::nor::this\npub(in crate::view) fn g() {}\n",
    );
    let paths: Vec<String> = named_paths(&m("p/q/r"), &code)
        .iter()
        .map(|n| {
            format!(
                "{}{}",
                n.path.join("::"),
                if n.reexport { " (pub)" } else { "" }
            )
        })
        .collect();
    assert_eq!(
        paths,
        [
            "p::q::r::child::Thing (pub)",
            "a::b",
            "a::c",
            "a",
            "p::x::Y",
            "q::r",
        ]
    );
    // A parent that defines an item its child uses, and re-exports the child: a circle.
    let mut sources = BTreeMap::new();
    let add = |sources: &mut BTreeMap<PathBuf, Source>, path: &str, module: &str, code: &str| {
        sources.insert(
            PathBuf::from(path),
            Source {
                module: m(module),
                code: blank(code),
                lines_before_tests: 1,
            },
        );
    };
    add(
        &mut sources,
        "src/v/mod.rs",
        "v",
        "mod kid;\npub use kid::K;\npub struct P;",
    );
    add(
        &mut sources,
        "src/v/kid.rs",
        "v/kid",
        "use super::P;\npub struct K;",
    );
    add(
        &mut sources,
        "src/w/mod.rs",
        "w",
        "mod a;\nmod b;\npub use a::A;",
    );
    add(&mut sources, "src/w/a.rs", "w/a", "pub struct A;");
    add(&mut sources, "src/w/b.rs", "w/b", "use super::A;");
    let found = circles(&graph(&sources));
    assert_eq!(
        found,
        [vec![
            PathBuf::from("src/v/kid.rs"),
            PathBuf::from("src/v/mod.rs")
        ]]
    );
}
