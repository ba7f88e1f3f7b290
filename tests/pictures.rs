//! The pictures (docs/pictures.md): `fragments.svg` at the root, in `latest/` and in
//! every `at/<T>/` of every fixture, parsed as XML, one titled element per fragment
//! standing as the merged view's rules make it stand, its domain the footer's, the
//! visible ones' union TileDB's non-empty domain, built from metadata alone; every
//! `values.png` decoded by Pillow (`tests/check_pictures.py`), its size, text chunks
//! and every pixel checked against the colour map of its cells; a quick look decoding
//! only the tiles its stride touches; 100,000 fragments drawn in bounded time and size;
//! and the README's picture being what fragfs makes now.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use fragfs::view::{ArrayTree, FileTree};
use serde_json::{json, Value};

/// The elements of an SVG that have a class and a `<title>`: their classes and the
/// title's text, in document order (parsed with quick-xml: a real XML parser, which
/// fails on anything not well-formed).
fn titled(svg: &[u8]) -> Vec<(BTreeSet<String>, String)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(svg);
    let mut out = Vec::new();
    let mut stack: Vec<Option<String>> = Vec::new();
    let mut title: Option<String> = None;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Err(e) => panic!("not well-formed XML: {e}"),
            Ok(Event::Start(e)) => {
                let class = e.try_get_attribute("class").unwrap().map(|a| {
                    a.normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .unwrap()
                        .into_owned()
                });
                if e.name().as_ref() == b"title" {
                    title = Some(String::new());
                }
                stack.push(class);
            }
            Ok(Event::End(e)) => {
                stack.pop();
                if e.name().as_ref() == b"title" {
                    if let (Some(Some(class)), Some(t)) = (stack.last(), title.take()) {
                        let classes = class.split(' ').map(str::to_string).collect();
                        out.push((classes, t));
                    }
                }
            }
            Ok(Event::Text(t)) => {
                if let Some(title) = &mut title {
                    title.push_str(&t.decode().unwrap());
                }
            }
            Ok(Event::GeneralRef(r)) => {
                if let Some(title) = &mut title {
                    title.push(match r.decode().unwrap().as_ref() {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "quot" => '"',
                        "apos" => '\'',
                        _ => r.resolve_char_ref().unwrap().expect("a known reference"),
                    });
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
        }
        buf.clear();
    }
    out
}

fn bytes(tree: &dyn FileTree, path: &str) -> Vec<u8> {
    let ino = tree.resolve(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    read_all(tree, ino).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn json_of(tree: &dyn FileTree, path: &str) -> Value {
    serde_json::from_slice(&bytes(tree, path)).unwrap()
}

/// The merged JSON (TileDB's reads at each timestamp) of every fixture.
fn merged_fixtures() -> JsonFiles {
    let mut all = fixture_files().1;
    for dir in ["tests/fixtures/consolidation", "tests/fixtures/tiff"] {
        all.extend(merged_files(&repo().join(dir)));
    }
    all
}

/// A domain line of a hover text, `y [0, 7], x [0, 11]`, as per dimension its low and
/// high (JSON values), the dimensions named `dims` in order.
fn parse_domain(text: &str, dims: &[String]) -> Vec<(Value, Value)> {
    let mut rest = text;
    let mut out = Vec::new();
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix(", ").unwrap_or_else(|| panic!("{text}"));
        }
        rest = rest
            .strip_prefix(d.as_str())
            .and_then(|r| r.strip_prefix(" ["))
            .unwrap_or_else(|| panic!("{text}: no {d}"));
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let lo = values.next().unwrap().unwrap();
        rest = rest[values.byte_offset()..]
            .strip_prefix(", ")
            .unwrap_or_else(|| panic!("{text}"));
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let hi = values.next().unwrap().unwrap();
        rest = rest[values.byte_offset()..]
            .strip_prefix(']')
            .unwrap_or_else(|| panic!("{text}"));
        out.push((lo, hi));
    }
    assert!(rest.is_empty(), "{text}: {rest:?} left");
    out
}

fn less(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x < y,
        _ => a.as_str().unwrap_or("") < b.as_str().unwrap_or(""),
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The line of a hover text that starts with `prefix`, without it.
fn line<'a>(title: &'a str, prefix: &str) -> &'a str {
    title
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {title}"))
}

/// Every fixture's `fragments.svg`, at the root, in `latest/` and at every timestamp
/// TileDB was read at: well-formed, exact in size, made without decoding a tile; one
/// titled element per fragment on disk (live and replaced), named, classed `live` or
/// `partial` exactly when the state of the same time (`read.json`) reads it (in part),
/// the others `hidden` and `replaced` or `later`; consolidated ones so classed; each
/// domain the footer's, the visible ones spanning TileDB's non-empty domain; every
/// delete with its time and condition.
#[test]
fn fragments_svg_draws_every_fragment_as_each_state_sees_it() {
    let mut checked = 0;
    for (array, merged) in merged_fixtures() {
        let what = array.display().to_string();
        let tree = open_view(&array, &merged).unwrap();
        let schema = json_of(&tree, "schema.json");
        let dims: Vec<String> = schema["dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        let array_json = json_of(&tree, "array.json");
        let live: BTreeSet<String> = array_json["fragments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect();
        let mut replaced = BTreeSet::new();
        let mut vacs = BTreeSet::new();
        for i in array_json["ignored"].as_array().unwrap() {
            let reason = i["reason"].as_str().unwrap();
            if let Some(vac) = reason.strip_prefix("consolidated away: listed in ") {
                let dir = i["dir"].as_str().unwrap();
                replaced.insert(dir.rsplit('/').next().unwrap().to_string());
                let vac = vac.rsplit('/').next().unwrap();
                vacs.insert(vac.trim_end_matches(".vac").to_string());
            }
        }
        let on_disk: BTreeSet<String> = live.union(&replaced).cloned().collect();
        // The pictures first: no tile may be decoded for them.
        let decoded = tree.chunks_decoded();
        let mut pictures = Vec::new();
        for read in merged["reads"].as_array().unwrap() {
            let t = read["timestamp"].as_u64();
            let paths = match t {
                None => vec!["fragments.svg".to_string(), "latest/fragments.svg".into()],
                Some(t) => vec![format!("at/{t}/fragments.svg")],
            };
            for path in paths {
                let ino = tree.resolve(&path).unwrap();
                let stat = tree.stat(ino).unwrap();
                let svg = bytes(&tree, &path);
                assert!(
                    stat.exact_size && stat.size == svg.len() as u64,
                    "{what} {path}: stat says {} bytes ({}exact), the file has {}",
                    stat.size,
                    if stat.exact_size { "" } else { "not " },
                    svg.len()
                );
                pictures.push((t, read.clone(), path, svg));
            }
        }
        assert_eq!(
            tree.chunks_decoded(),
            decoded,
            "{what}: drawing the fragments decoded tiles"
        );
        let deletes = array_json["deletes"].as_array().unwrap().clone();
        for (t, read, path, svg) in pictures {
            let all = titled(&svg);
            let fragments: Vec<&(BTreeSet<String>, String)> =
                all.iter().filter(|(c, _)| c.contains("fragment")).collect();
            let name_of = |title: &str| title.lines().next().unwrap().to_string();
            let names: Vec<String> = fragments.iter().map(|(_, t)| name_of(t)).collect();
            assert_eq!(
                names.iter().cloned().collect::<BTreeSet<_>>(),
                on_disk,
                "{what} {path}: the fragments drawn"
            );
            assert_eq!(
                names.len(),
                on_disk.len(),
                "{what} {path}: one element each"
            );
            let state = match t {
                None => "latest".to_string(),
                Some(t) => format!("at/{t}"),
            };
            // What the merged view reads at that time; a state it cannot merge (a delete
            // it does not evaluate) is checked against TileDB's domain alone.
            let read_json = tree
                .resolve(&format!("{state}/read.json"))
                .and_then(|ino| read_all(&tree, ino));
            let read_by: Option<BTreeMap<String, bool>> = read_json.ok().map(|b| {
                let read: Value = serde_json::from_slice(&b).unwrap();
                read["fragments"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        (
                            f["name"].as_str().unwrap().to_string(),
                            f["partly_visible"].as_bool().unwrap(),
                        )
                    })
                    .collect()
            });
            if read_by.is_none() {
                eprintln!("{what} {path}: {state} cannot be merged; checked against TileDB");
            }
            let mut union: Option<Vec<(Value, Value)>> = None;
            for (classes, title) in &fragments {
                let name = name_of(title);
                let at = format!("{what} {path} {name}");
                let parts: Vec<&str> = name.splitn(4, '_').collect();
                let (t1, t2): (u64, u64) = (parts[2].parse().unwrap(), {
                    parts[3].split('_').next().unwrap().parse().unwrap()
                });
                let visible = classes.contains("live") || classes.contains("partial");
                let standing = match &read_by {
                    Some(read_by) => read_by.get(&name).copied(),
                    None => visible.then(|| classes.contains("partial")),
                };
                match standing {
                    Some(partial) => {
                        let want = if partial { "partial" } else { "live" };
                        assert!(classes.contains(want), "{at}: {classes:?}, not {want}");
                        assert!(!classes.contains("hidden"), "{at}: {classes:?}");
                    }
                    None => {
                        assert!(classes.contains("hidden"), "{at}: {classes:?} not hidden");
                        if classes.contains("replaced") {
                            assert!(replaced.contains(&name), "{at}: replaced?");
                            assert!(title.contains("replaced by the consolidated fragment"));
                        } else {
                            assert!(classes.contains("later"), "{at}: {classes:?}");
                            assert!(t.is_some_and(|t| t2 > t), "{at}: later?");
                        }
                    }
                }
                assert_eq!(
                    classes.contains("consolidated"),
                    t1 < t2 || vacs.contains(&name),
                    "{at}: consolidated? {classes:?}"
                );
                assert!(
                    title.contains(&format!("timestamps {t1} to {t2} (")),
                    "{at}"
                );
                // The domain: the footer's, for the fragments the tree shows.
                let domain = line(title, "non-empty domain: ");
                if live.contains(&name) {
                    let footer = json_of(&tree, &format!("fragments/{name}/footer.json"));
                    let want: Vec<String> = dims
                        .iter()
                        .zip(footer["non_empty_domain"].as_array().unwrap())
                        .map(|(d, r)| format!("{d} [{}, {}]", r[0], r[1]))
                        .collect();
                    assert_eq!(domain, want.join(", "), "{at}");
                    let cells = footer["derived"]["cell_count"].as_u64().unwrap();
                    assert!(
                        title.contains(&format!(" {} cells", fmt_count(cells))),
                        "{at}: {title}"
                    );
                }
                if visible && domain != "none" {
                    let d = parse_domain(domain, &dims);
                    union = Some(match union {
                        None => d,
                        Some(u) => u
                            .into_iter()
                            .zip(d)
                            .map(|((a, b), (c, e))| {
                                (
                                    if less(&c, &a) { c } else { a },
                                    if less(&b, &e) { e } else { b },
                                )
                            })
                            .collect(),
                    });
                }
            }
            // What TileDB read: its non-empty domain is the union of the visible ones'.
            // (A read TileDB itself failed has no domain: `error` says why.)
            match (&read["non_empty_domain"], &union) {
                _ if read.get("error").is_some() => {}
                (Value::Null, None) => {}
                (Value::Array(want), Some(got)) => {
                    for (i, (w, (lo, hi))) in want.iter().zip(got).enumerate() {
                        assert!(
                            same(&w[0], lo) && same(&w[1], hi),
                            "{what} {path}: dimension {i} spans {w} in TileDB, [{lo}, {hi}] drawn"
                        );
                    }
                }
                (want, got) => panic!("{what} {path}: TileDB's domain {want}, drawn {got:?}"),
            }
            let conditions: Vec<&String> = all
                .iter()
                .filter(|(c, _)| c.contains("delete") || c.contains("update"))
                .map(|(_, t)| t)
                .collect();
            assert_eq!(conditions.len(), deletes.len(), "{what} {path}: deletes");
            for (d, title) in deletes.iter().zip(conditions) {
                let ts = d["timestamp"].as_u64().unwrap();
                assert!(title.contains(&format!(" at {ts} (")), "{what}: {title}");
                if let Some(c) = d["condition"].as_str() {
                    assert!(title.contains(c), "{what}: {title} lacks {c}");
                }
                let applied = t.is_none_or(|t| ts <= t);
                assert_eq!(
                    title.contains("applied in this picture"),
                    applied,
                    "{what} {path}: {title}"
                );
            }
            checked += 1;
        }
    }
    eprintln!("{checked} pictures checked");
    assert!(checked > 40, "{checked} pictures");
}

/// `12,345`, as the hover texts print counts.
fn fmt_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Writes every `values.png` of `tree` (and the files a check of it needs) under `out`,
/// returning the check's entries ([`check_pictures.py`]'s spec).
fn quick_looks(tree: &ArrayTree, label: &str, out: &Path) -> Vec<Value> {
    let schema = json_of(tree, "schema.json");
    let n = schema["dimensions"].as_array().unwrap().len();
    let mut folders: Vec<(String, bool)> = vec![("latest".into(), false)];
    for e in tree.list(tree.resolve("at").unwrap()).unwrap() {
        folders.push((format!("at/{}", e.name), false));
    }
    for e in tree.list(tree.resolve("fragments").unwrap()).unwrap() {
        folders.push((format!("fragments/{}", e.name), true));
    }
    let mut entries = Vec::new();
    for (folder, fragment) in folders {
        let Ok(dir) = tree.resolve(&folder) else {
            continue;
        };
        let Ok(listed) = tree.list(dir) else {
            // A state that cannot be merged (an update commit) says so elsewhere.
            continue;
        };
        let fields: Vec<String> = listed
            .iter()
            .filter(|e| e.is_dir() && e.name != "zarr")
            .map(|e| e.name.clone())
            .collect();
        let has_png = fields
            .iter()
            .any(|f| tree.resolve(&format!("{folder}/{f}/values.png")).is_ok());
        if !has_png {
            continue;
        }
        let (fills, fill_valid): (Vec<(String, Value)>, Vec<bool>) = if fragment {
            let footer = json_of(tree, &format!("{folder}/footer.json"));
            let own = json_of(
                tree,
                &format!(
                    "schemas/{}.json",
                    footer["array_schema_name"].as_str().unwrap()
                ),
            );
            footer["derived"]["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let a = own["attributes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|a| a["name"] == f["name"]);
                    (
                        (
                            f["name"].as_str().unwrap().to_string(),
                            a.map_or(Value::Null, |a| a["fill_value"].clone()),
                        ),
                        a.is_some_and(|a| a["fill_value_validity"] == true),
                    )
                })
                .unzip()
        } else {
            let read = json_of(tree, &format!("{folder}/read.json"));
            fields
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let attr = i
                        .checked_sub(n)
                        .and_then(|k| schema["attributes"].as_array().unwrap().get(k));
                    (
                        (name.clone(), read["fill_values"][name].clone()),
                        attr.is_some_and(|a| a["fill_value_validity"] == true),
                    )
                })
                .unzip()
        };
        for (i, field) in fields.iter().enumerate() {
            let png = format!("{folder}/{field}/values.png");
            let Ok(ino) = tree.resolve(&png) else {
                continue;
            };
            let dest = out.join(label).join(entries.len().to_string());
            std::fs::create_dir_all(&dest).unwrap();
            std::fs::write(dest.join("values.png"), read_all(tree, ino).unwrap()).unwrap();
            std::fs::write(
                dest.join("values.npy"),
                bytes(tree, &format!("{folder}/{field}/values.npy")),
            )
            .unwrap();
            let validity = tree
                .resolve(&format!("{folder}/{field}/validity.bin"))
                .ok()
                .map(|v| {
                    let p = dest.join("validity.bin");
                    std::fs::write(&p, read_all(tree, v).unwrap()).unwrap();
                    p
                });
            let (coords, low) = if fragment {
                let footer = json_of(tree, &format!("{folder}/footer.json"));
                let mut coords = Vec::new();
                for (d, dim) in fields.iter().take(n).enumerate() {
                    let p = dest.join(format!("coords{d}.npy"));
                    std::fs::write(&p, bytes(tree, &format!("{folder}/{dim}/values.npy"))).unwrap();
                    coords.push(p);
                }
                let low: Vec<Value> = footer["non_empty_domain"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r[0].clone())
                    .collect();
                (json!(coords), json!(low))
            } else {
                (Value::Null, Value::Null)
            };
            entries.push(json!({
                "what": format!("{label} {png}"),
                "png": dest.join("values.png"),
                "values": dest.join("values.npy"),
                "validity": validity,
                "coords": coords,
                "low": low,
                "fill": fills[i].1,
                "fill_valid": fill_valid[i],
            }));
        }
    }
    entries
}

fn check_quick_looks(python: &str, entries: &[Value], dir: &Path) -> String {
    let spec = dir.join("spec.json");
    std::fs::write(&spec, serde_json::to_vec(entries).unwrap()).unwrap();
    run_ok(
        std::process::Command::new(python)
            .arg(repo().join("tests/check_pictures.py"))
            .arg(&spec),
    )
}

/// Every `values.png` of every fixture (fragments, `latest/`, every `at/<T>/`) decodes
/// with Pillow to its stated size, says its range and shape, and has every pixel the
/// colour map makes of its cell; the attributes that get one are the dense numeric
/// single-value ones of 2 or more dimensions (the 3-D fixture its first slice).
#[test]
fn every_quick_look_decodes_and_colours_its_cells() {
    let Some(python) = python_with("PIL") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let mut entries = Vec::new();
    let mut arrays = fixture_files().0;
    for dir in ["tests/fixtures/consolidation", "tests/fixtures/tiff"] {
        arrays.extend(expected_files(&repo().join(dir)));
    }
    for (array, expected) in arrays {
        let tree = open_view(&array, &expected).unwrap();
        let label = array.file_name().unwrap().to_string_lossy().into_owned();
        entries.extend(quick_looks(&tree, &label, out.path()));
    }
    let whats: Vec<&str> = entries
        .iter()
        .map(|e| e["what"].as_str().unwrap())
        .collect();
    for want in [
        "sample latest/temperature/values.png",
        "dense_2d latest/",
        "merge_dense_3d latest/",
        "merge_dense_colmajor fragments/",
    ] {
        assert!(
            whats.iter().any(|w| w.starts_with(want)),
            "no quick look like {want}: {whats:?}"
        );
    }
    assert!(
        !whats
            .iter()
            .any(|w| w.contains("/name/") || w.contains("sparse")),
        "strings and sparse arrays have none: {whats:?}"
    );
    let printed = check_quick_looks(&python, &entries, out.path());
    eprintln!("{printed}");
    assert!(printed.contains(&format!("checked {} quick looks", entries.len())));
}

/// A dense 2-D array of 3000 x 8 cells in tiles of one row, written in two fragments over
/// part of the domain, a nullable attribute with nulls and another with NaN: `values.png` of `latest/` and of
/// the first fragment are strided by 3 and decode exactly the tiles the sampled rows lie
/// in (a chunk of values and one of validity each: a third of them); Pillow sees fill
/// and NaN transparent, nulls grey and the rest coloured.
#[test]
fn a_quick_look_decodes_only_the_tiles_its_stride_touches() {
    let Some(python) = python_with("tiledb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("strided");
    let script = r#"
import sys, numpy as np, tiledb
uri = sys.argv[1]
dom = tiledb.Domain(tiledb.Dim("y", domain=(0, 2999), tile=1, dtype=np.int32),
                    tiledb.Dim("x", domain=(0, 7), tile=8, dtype=np.int32))
schema = tiledb.ArraySchema(domain=dom, sparse=False, attrs=[
    tiledb.Attr("v", dtype=np.float64, nullable=True, filters=[tiledb.ZstdFilter()]),
    tiledb.Attr("w", dtype=np.float32, fill=-1.0)])
tiledb.Array.create(uri, schema)
v = np.arange(3000 * 8, dtype=np.float64).reshape(3000, 8)
null = np.zeros((3000, 8), dtype=bool)
null[::7, 3] = True
w = v.astype(np.float32)
w[6, :] = np.nan
w[9, 3] = np.inf
def write(t, rows, cols, sign):
    with tiledb.open(uri, "w", timestamp=t) as A:
        A[rows, cols] = {"v": np.ma.masked_array(sign * v[rows, cols], mask=null[rows, cols]),
                         "w": sign * w[rows, cols]}
write(1, slice(0, 2400), slice(0, 8), 1)
write(2, slice(2400, 2700), slice(0, 6), -1)
"#;
    run_ok(
        std::process::Command::new(&python)
            .args(["-c", script])
            .arg(&uri),
    );
    let first = {
        let tree = ArrayTree::open_path(&uri, Default::default(), 64 << 20).unwrap();
        tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
            .name
            .clone()
    };
    for path in [
        "latest/v/values.png".to_string(),
        format!("fragments/{first}/v/values.png"),
    ] {
        // A fresh tree: nothing decoded yet.
        let tree = ArrayTree::open_path(&uri, Default::default(), 64 << 20).unwrap();
        let ino = tree.resolve(&path).unwrap();
        let before = tree.chunks_decoded();
        let png = read_all(&tree, ino).unwrap();
        let decoded = tree.chunks_decoded() - before;
        eprintln!("{path}: {} bytes, {decoded} chunks decoded", png.len());
        // One chunk of values.bin and one of validity.bin per tile of the sampled rows
        // 0, 3, 6, ...: latest/ samples 900 rows of 2700 (the first fragment's below
        // 2400, the second's above, whose columns 6 and 7 no fragment wrote: fill); the
        // first fragment 800 of its 2400.
        let want = if path.starts_with("latest") {
            2 * 900
        } else {
            2 * 800
        };
        assert_eq!(decoded, want, "{path}: tiles decoded");
        let again = tree.chunks_decoded();
        assert_eq!(read_all(&tree, ino).unwrap(), png, "{path}: the same bytes");
        assert_eq!(tree.chunks_decoded(), again, "{path}: kept, not made again");
        assert_eq!(
            tree.stat(ino).unwrap().size,
            png.len() as u64,
            "{path}: sized"
        );
    }
    let tree = ArrayTree::open_path(&uri, Default::default(), 64 << 20).unwrap();
    let entries = quick_looks(&tree, "strided", dir.path());
    assert_eq!(
        entries.len(),
        10,
        "two attributes: latest, at/1, at/2, two fragments"
    );
    let printed = check_quick_looks(&python, &entries, dir.path());
    eprintln!("{printed}");
    let kinds = |png: &str| {
        printed
            .lines()
            .find(|l| l.starts_with(&format!("ok strided latest/{png}/")))
            .unwrap()
            .to_string()
    };
    // The nullable attribute: unwritten cells (fill, validity 0) and nulls; the other,
    // with a fill value of its own: unwritten cells, NaN and an infinity.
    let (v, w) = (kinds("v"), kinds("w"));
    assert!(!v.contains("'fill': 0") && !v.contains("'null': 0"), "{v}");
    assert!(!w.contains("'fill': 0") && !w.contains("'nan': 0"), "{w}");
}

/// 100,000 fragments (one fragment's files hard-linked under 100,000 names, as an array
/// written for a long time gets them): `fragments.svg` groups them, says so, stays
/// under 1 MiB, and is made within 300 s. The bound is generous on purpose: it took
/// 4.2 s in the debug build on the 2-core test machine with another build running;
/// what must not grow is the file, which is asserted tightly.
#[test]
fn a_hundred_thousand_fragments_are_drawn_in_bounded_time_and_size() {
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, 100_000, 1_000);
    let tree = ArrayTree::open_path(&array, Default::default(), 64 << 20).unwrap();
    let started = std::time::Instant::now();
    let ino = tree.resolve("fragments.svg").unwrap();
    let size = tree.stat(ino).unwrap().size;
    let svg = read_all(&tree, ino).unwrap();
    let took = started.elapsed();
    eprintln!(
        "fragments.svg of 100,000 fragments: {} bytes in {:.1} s",
        svg.len(),
        took.as_secs_f64()
    );
    assert_eq!(size, svg.len() as u64);
    assert!(svg.len() < 1 << 20, "{} bytes", svg.len());
    assert!(took.as_secs() < 300, "{took:?}");
    let text = String::from_utf8(svg.clone()).unwrap();
    assert!(
        text.contains("100,000 fragments are drawn as 1 shapes"),
        "aggregation not said"
    );
    let all = titled(&svg);
    let groups: Vec<_> = all
        .iter()
        .filter(|(c, _)| c.contains("fragments"))
        .collect();
    assert_eq!(groups.len(), 1);
    assert!(groups[0]
        .1
        .starts_with("100,000 fragments drawn as one (live)"));
    assert_eq!(tree.chunks_decoded(), 0);
}

/// The README opens with the picture of the sample array's fragments: the committed
/// file is what fragfs makes now (`fragfs cat tests/fixtures/tiledb/sample
/// fragments.svg > docs/images/sample-fragments.svg` makes it again).
#[test]
fn the_readme_picture_is_what_fragfs_draws() {
    let (array, expected) = fixture("sample");
    let tree = open_view(&array, &expected).unwrap();
    let made = bytes(&tree, "fragments.svg");
    let committed: PathBuf = repo().join("docs/images/sample-fragments.svg");
    let have = std::fs::read(&committed).unwrap_or_default();
    assert!(
        have == made,
        "{} is stale: run `fragfs cat tests/fixtures/tiledb/sample fragments.svg > \
         docs/images/sample-fragments.svg`",
        committed.display()
    );
    // The tour opens with it: the first thing under its heading is the image.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let tour = readme
        .split("\n## ")
        .find(|s| s.lines().next().is_some_and(|h| h.contains("tour")))
        .expect("the README has a tour");
    let first = tour.lines().skip(1).find(|l| !l.trim().is_empty()).unwrap();
    assert!(
        first.contains("![") && tour.contains("(docs/images/sample-fragments.svg)"),
        "the README's tour does not open with the picture: {first}"
    );
}
