//! Conformance checking shared by the tests: compares what the view serves with an
//! `<array>.expected.json` as written by the corpus and fixture generators (format in
//! `docs/corpus.md`).

#![allow(dead_code)]

pub mod http;
pub mod mounting;
pub mod nfs;
pub mod rng;
pub mod s3;
pub mod watched;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use fragfs::array::{parse_key, OpenOptions};
use fragfs::view::{ArrayTree, FileTree, Ino, ROOT};
use serde_json::Value;

/// Runs `cmd`, which must succeed, and returns its standard output; a failure shows the
/// command and what it wrote (the checkers print a mismatch on standard output, Python
/// its traceback on standard error).
pub fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn shared_corpus() -> PathBuf {
    repo().join("../shared/corpus/tiledb")
}

pub fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/tiledb")
}

/// Arrays written by `scripts/make_feature_fixtures.py`: groups, metadata, enumerations,
/// labels, deletes, `from_numpy`/`from_pandas`, and the merged-view rules.
pub fn features() -> PathBuf {
    repo().join("tests/fixtures/features")
}

/// Sparse arrays with the Hilbert cell order (point clouds as PDAL writes them, integer
/// and string dimensions), written by `scripts/make_hilbert_fixtures.py`.
pub fn hilbert_fixtures() -> PathBuf {
    repo().join("tests/fixtures/hilbert")
}

/// A TileDB-SOMA experiment whose categories grew over several writes, with what
/// TileDB-SOMA and TileDB-Py read of it (`scripts/make_soma_fixtures.sh`).
pub fn soma_fixtures() -> PathBuf {
    repo().join("tests/fixtures/soma")
}

/// Arrays from TileDB's own test inputs (`test/inputs/arrays`), copied from the spec.
pub fn tiledb_test_inputs() -> PathBuf {
    repo().join("tests/fixtures/tiledb-test-inputs")
}

/// Arrays built by `scripts/make_handbuilt_fixtures.py` from the spec alone.
pub fn handbuilt() -> PathBuf {
    repo().join("tests/fixtures/handbuilt")
}

/// `(array folder, JSON)` pairs: an expected or a merged JSON file per array.
pub type JsonFiles = Vec<(PathBuf, Value)>;

/// `(array folder, expected json)` for every `*.expected.json` in `dir`, sorted. Panics
/// when there is none: a test over a folder that silently checked nothing passes for
/// the wrong reason (a moved folder, a renamed suffix).
pub fn expected_files(dir: &Path) -> JsonFiles {
    json_files(dir, ".expected.json")
}

/// `(array folder, merged json)` for every `*.merged.json` in `dir`, sorted; panics when
/// there is none (see [`expected_files`]).
pub fn merged_files(dir: &Path) -> JsonFiles {
    json_files(dir, ".merged.json")
}

/// `(array folder, json)` for every `*<suffix>` in `dir`, sorted, at least one.
fn json_files(dir: &Path, suffix: &str) -> JsonFiles {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut names: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if let Some(array) = name.strip_suffix(suffix) {
            let json: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            // Arrays inside a group or another array (a SOMA dataframe, a dimension
            // label) name their folder by path: `soma_experiment/obs`.
            let path = match json["array"].as_str() {
                Some(rel) if rel.contains('/') => dir.join(rel),
                _ => dir.join(array),
            };
            out.push((path, json));
        }
    }
    assert!(!out.is_empty(), "no *{suffix} in {}", dir.display());
    out
}

/// The expected and the merged JSON files of the repository's TileDB, feature, Hilbert
/// and SOMA fixtures.
pub fn fixture_files() -> (JsonFiles, JsonFiles) {
    let (mut arrays, mut merged) = (Vec::new(), Vec::new());
    for dir in [fixtures(), features(), hilbert_fixtures(), soma_fixtures()] {
        arrays.extend(expected_files(&dir));
        merged.extend(merged_files(&dir));
    }
    (arrays, merged)
}

/// The expected and the merged JSON files of every version folder of the shared corpus.
pub fn corpus_files(corpus: &Path) -> (JsonFiles, JsonFiles) {
    let (mut arrays, mut merged) = (Vec::new(), Vec::new());
    for (_, dir) in corpus_versions(corpus) {
        arrays.extend(expected_files(&dir));
        merged.extend(merged_files(&dir));
    }
    (arrays, merged)
}

/// The arrays of the shared corpus a door that only carries bytes (HTTP, the S3 API,
/// NFS, WebDAV, an S3 bucket) reads, with their merged JSON: in each version folder,
/// the fewest arrays that together show every feature of that folder's arrays
/// ([`corpus_features`]: layout, orders, datatypes, var and multi-value cells,
/// nullability, filters, encryption, several fragments, consolidation, deletes,
/// duplicates), about half of the 525. What a door adds to the tree does not depend on
/// how the tree decoded a file, only on which folders and files there are: the rest is
/// read byte for byte through the tree (tests/conformance.rs, tests/merged.rs) and
/// through FUSE (tests/mount.rs and the reader tests).
pub fn corpus_sample(corpus: &Path) -> (JsonFiles, JsonFiles) {
    let (mut arrays, mut merged) = (Vec::new(), Vec::new());
    for (_, dir) in corpus_versions(corpus) {
        let mut folder: Vec<_> = expected_files(&dir)
            .into_iter()
            .map(|(array, expected)| {
                let features = corpus_features(&expected);
                (array, expected, features)
            })
            .collect();
        let mut uncovered: std::collections::BTreeSet<String> = folder
            .iter()
            .flat_map(|(_, _, f)| f.iter().cloned())
            .collect();
        // Greedy: the array that shows the most features not yet shown, the first by
        // name among equals.
        while !uncovered.is_empty() {
            let best = (0..folder.len())
                .max_by_key(|&i| {
                    let new = folder[i].2.intersection(&uncovered).count();
                    (new, std::cmp::Reverse(i))
                })
                .unwrap();
            let (array, expected, features) = folder.remove(best);
            uncovered.retain(|f| !features.contains(f));
            arrays.push((array, expected));
        }
        let chosen: std::collections::HashSet<&PathBuf> = arrays.iter().map(|(a, _)| a).collect();
        merged.extend(
            merged_files(&dir)
                .into_iter()
                .filter(|(a, _)| chosen.contains(a)),
        );
    }
    arrays.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        arrays.len() > 200 && arrays.len() < 525,
        "{} arrays sampled",
        arrays.len()
    );
    (arrays, merged)
}

/// What an `<array>.expected.json` says the array shows, as words: `dense`, `order
/// row-major col-major`, `attribute INT32`, `dimension var`, `filter ZstdFilter`,
/// `offsets filter ...`, `nullable`, `encrypted`, `fragments`, `consolidated`,
/// `deletes`, `duplicates`.
pub fn corpus_features(expected: &Value) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    out.insert(text(&expected["array_type"]));
    out.insert(format!(
        "order {} {}",
        text(&expected["cell_order"]),
        text(&expected["tile_order"])
    ));
    let filter_name = |f: &Value| match f {
        Value::Array(parts) => parts.first().map(text).unwrap_or_default(),
        f => text(f),
    };
    for (role, fields) in [
        ("attribute", &expected["attributes"]),
        ("dimension", &expected["dimensions"]),
    ] {
        for field in fields.as_array().into_iter().flatten() {
            out.insert(format!("{role} {}", text(&field["datatype"])));
            match &field["cell_val_num"] {
                Value::String(var) => out.insert(format!("{role} {var}")),
                n if n.as_u64().is_some_and(|n| n > 1) => out.insert(format!("{role} multi")),
                _ => false,
            };
            if field["nullable"] == Value::Bool(true) {
                out.insert("nullable".into());
            }
            for f in field["filters"].as_array().into_iter().flatten() {
                out.insert(format!("filter {}", filter_name(f)));
            }
        }
    }
    if let Some(lists) = expected["schema_filters"].as_object() {
        for (list, filters) in lists {
            for f in filters.as_array().into_iter().flatten() {
                out.insert(format!("{list} filter {}", filter_name(f)));
            }
        }
    }
    if expected["encryption"]["key"].is_string() {
        out.insert("encrypted".into());
    }
    let fragments = expected["fragments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if fragments.len() > 1 {
        out.insert("fragments".into());
    }
    // `__t1_t2_uuid_v`: a fragment spanning timestamps is a consolidated one.
    if fragments.iter().any(|f| {
        let dir = text(&f["fragment_dir"]);
        let name = dir.rsplit('/').next().unwrap_or_default();
        let mut parts = name.trim_start_matches('_').split('_');
        let stamp = |p: Option<&str>| p.and_then(|p| p.parse::<u64>().ok());
        matches!((stamp(parts.next()), stamp(parts.next())), (Some(a), Some(b)) if a != b)
    }) {
        out.insert("consolidated".into());
    }
    if expected["deletes"]
        .as_array()
        .is_some_and(|d| !d.is_empty())
    {
        out.insert("deletes".into());
    }
    if expected["allows_duplicates"] == Value::Bool(true) {
        out.insert("duplicates".into());
    }
    out
}

/// The shared corpus's folders, one per format version (`v2`, ...), by version; panics
/// when there is none. Iterating these, never a guessed range, no version is skipped
/// unnoticed and every folder holds arrays.
pub fn corpus_versions(corpus: &Path) -> Vec<(u32, PathBuf)> {
    let entries = std::fs::read_dir(corpus).unwrap_or_else(|e| panic!("{}: {e}", corpus.display()));
    let mut out: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.strip_prefix('v')?.parse().ok()?;
            Some((version, e.path()))
        })
        .collect();
    out.sort();
    assert!(
        !out.is_empty(),
        "no version folders in {}",
        corpus.display()
    );
    out
}

/// The options (the encryption key) an expected JSON asks for.
pub fn options_for(expected: &Value) -> OpenOptions {
    let key = expected["encryption"]["key"]
        .as_str()
        .map(|k| parse_key(k).unwrap());
    OpenOptions { key }
}

pub fn open_view(array: &Path, expected: &Value) -> fragfs::Result<ArrayTree> {
    ArrayTree::open_path(array, options_for(expected), 64 << 20)
}

/// The same array served from memory, through the test store (which counts requests).
pub fn open_in_memory(
    array: &Path,
    expected: &Value,
) -> fragfs::Result<(ArrayTree, std::sync::Arc<fragfs::storage::MemoryStore>)> {
    let store = std::sync::Arc::new(fragfs::storage::MemoryStore::from_dir(array)?);
    let tree = ArrayTree::open(store.clone(), options_for(expected), 64 << 20)?;
    Ok((tree, store))
}

pub fn read_all(view: &dyn FileTree, node: Ino) -> fragfs::Result<Vec<u8>> {
    let size = view.size(node)?;
    // Odd-sized reads, so tile and chunk boundaries fall inside requests.
    let mut out = Vec::new();
    while (out.len() as u64) < size {
        let part = view.read_at(node, out.len() as u64, 7919)?;
        if part.is_empty() {
            break;
        }
        out.extend(part);
    }
    assert_eq!(
        out.len() as u64,
        size,
        "read_at served fewer bytes than size()"
    );
    Ok(out)
}

fn element_bytes(v: &Value, datatype: &str) -> Result<Vec<u8>, String> {
    let as_f64 = |v: &Value| -> Result<f64, String> {
        match v {
            Value::String(s) if s == "NaN" => Ok(f64::NAN),
            Value::String(s) if s == "Infinity" => Ok(f64::INFINITY),
            Value::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
            v => v.as_f64().ok_or(format!("not a number: {v}")),
        }
    };
    let int = |v: &Value| -> Result<i128, String> {
        v.as_i64()
            .map(|x| x as i128)
            .or(v.as_u64().map(|x| x as i128))
            .ok_or(format!("not an integer: {v}"))
    };
    Ok(match datatype {
        "INT8" | "CHAR" | "UINT8" | "BOOL" | "STRING_ASCII" | "STRING_UTF8" | "BLOB" | "ANY" => {
            vec![int(v)? as u8]
        }
        "INT16" | "UINT16" => (int(v)? as u16).to_le_bytes().to_vec(),
        "INT32" | "UINT32" => (int(v)? as u32).to_le_bytes().to_vec(),
        "FLOAT32" => (as_f64(v)? as f32).to_le_bytes().to_vec(),
        "FLOAT64" => as_f64(v)?.to_le_bytes().to_vec(),
        _ => (int(v)? as u64).to_le_bytes().to_vec(),
    })
}

pub fn cell_bytes(v: &Value, datatype: &str) -> Result<Vec<u8>, String> {
    match v {
        Value::String(s) if !matches!(datatype, "FLOAT32" | "FLOAT64") => Ok(s.as_bytes().to_vec()),
        Value::Array(items) => {
            let mut out = Vec::new();
            for i in items {
                out.extend(element_bytes(i, datatype)?);
            }
            Ok(out)
        }
        v => element_bytes(v, datatype),
    }
}

fn same_float_bits(a: &[u8], b: &[u8], datatype: &str) -> bool {
    match datatype {
        "FLOAT32" => a.chunks(4).zip(b.chunks(4)).all(|(x, y)| {
            let (x, y) = (
                f32::from_le_bytes(x.try_into().unwrap()),
                f32::from_le_bytes(y.try_into().unwrap()),
            );
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        "FLOAT64" => a.chunks(8).zip(b.chunks(8)).all(|(x, y)| {
            let (x, y) = (
                f64::from_le_bytes(x.try_into().unwrap()),
                f64::from_le_bytes(y.try_into().unwrap()),
            );
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        _ => a == b,
    }
}

/// Where the checks read the tree from: the view itself, or a mounted folder.
pub trait Tree {
    /// Names listed in `fragments/`.
    fn fragments(&self) -> Result<Vec<String>, String>;
    /// The bytes of the file at a `/`-separated virtual path.
    fn read(&self, path: &str) -> Result<Vec<u8>, String>;
}

impl Tree for dyn FileTree {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let dir = self.resolve("fragments").map_err(|e| e.to_string())?;
        let list = self.list(dir).map_err(|e| e.to_string())?;
        Ok(list.into_iter().map(|e| e.name).collect())
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let node = self.resolve(path).map_err(|e| e.to_string())?;
        read_all(self, node).map_err(|e| e.to_string())
    }
}

impl Tree for ArrayTree {
    fn fragments(&self) -> Result<Vec<String>, String> {
        (self as &dyn FileTree).fragments()
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        (self as &dyn FileTree).read(path)
    }
}

/// A tree served by a FUSE mount, read with plain file I/O.
pub struct Mounted(pub PathBuf);

impl Tree for Mounted {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let dir = self.0.join("fragments");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        names.sort();
        Ok(names)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let p = self.0.join(path);
        std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))
    }
}

/// Checks every stored field of every expected fragment. Returns the number of fields
/// checked, or the first mismatch.
pub fn check_array(array: &Path, expected: &Value) -> Result<usize, String> {
    let view = open_view(array, expected).map_err(|e| format!("open: {e}"))?;
    check_tree(&view, expected)
}

/// What TileDB stores for an empty var-size cell, as an expected or merged JSON records
/// it (`empty_var_cell_stored_bytes`; none where absent).
fn empty_var_bytes(json: &Value) -> Vec<u8> {
    json["empty_var_cell_stored_bytes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|b| b.as_u64())
                .map(|b| b as u8)
                .collect()
        })
        .unwrap_or_default()
}

/// [`check_array`] against any [`Tree`].
pub fn check_tree(tree: &dyn Tree, expected: &Value) -> Result<usize, String> {
    let empty_var = empty_var_bytes(expected);
    let frags = tree.fragments()?;
    let expected_frags = expected["fragments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if frags.len() != expected_frags.len() {
        return Err(format!(
            "{} live fragments shown, {} expected ({frags:?})",
            frags.len(),
            expected_frags.len(),
        ));
    }
    let mut checked = 0;
    for ef in &expected_frags {
        let dir = ef["fragment_dir"].as_str().unwrap_or_default();
        let name = dir.rsplit('/').next().unwrap_or(dir);
        if !frags.iter().any(|f| f == name) {
            return Err(format!("fragment {name} is not listed ({frags:?})"));
        }
        for (d, field) in ef["fields"].as_array().into_iter().flatten().enumerate() {
            let fname = field["name"].as_str().unwrap_or_default();
            let ctx = format!("{name}/{fname}");
            let fdir = format!("fragments/{name}/{}", fragfs::view::names::encode(fname));
            if field["stored"] == Value::Bool(false) {
                check_synthesized(tree, &fdir, field, ef, d).map_err(|e| format!("{ctx}: {e}"))?;
            } else {
                check_field(tree, &fdir, field, &empty_var).map_err(|e| format!("{ctx}: {e}"))?;
            }
            checked += 1;
        }
    }
    // An expected JSON whose keys moved would otherwise check nothing and pass.
    if checked == 0 {
        return Err("the expected JSON lists no field to check".into());
    }
    Ok(checked)
}

/// A dense fragment's dimension, which TileDB does not store: its synthesized
/// `values.bin` must hold each stored cell's coordinate (`storage_coords`).
fn check_synthesized(
    tree: &dyn Tree,
    fdir: &str,
    field: &Value,
    fragment: &Value,
    dim: usize,
) -> Result<(), String> {
    let datatype = field["datatype"].as_str().unwrap_or_default();
    let coords = fragment["storage_coords"]
        .as_array()
        .ok_or("dense fragment without storage_coords")?;
    let mut want = Vec::new();
    for c in coords {
        want.extend(element_bytes(&c[dim], datatype)?);
    }
    let got = tree.read(&format!("{fdir}/values.bin"))?;
    if got != want {
        let size = want.len() / coords.len().max(1);
        let first = got
            .chunks(size.max(1))
            .zip(want.chunks(size.max(1)))
            .position(|(a, b)| a != b);
        return Err(format!(
            "synthesized coordinates differ ({} bytes, expected {}; first different cell {first:?})",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

pub fn check_field(
    tree: &dyn Tree,
    fdir: &str,
    field: &Value,
    empty_var: &[u8],
) -> Result<(), String> {
    let file = |name: &str| -> Result<Vec<u8>, String> {
        tree.read(&format!("{fdir}/{name}"))
            .map_err(|e| format!("{name}: {e}"))
    };
    let datatype = field["datatype"].as_str().unwrap_or_default();
    let values = field["values"].as_array().cloned().unwrap_or_default();
    let cells = values.len();
    let data = file("values.bin")?;
    if field["nullable"] == Value::Bool(true) {
        let validity = file("validity.bin")?;
        let expected: Vec<u8> = field["validity"]
            .as_array()
            .ok_or("no expected validity")?
            .iter()
            .map(|v| v.as_u64().unwrap_or(0) as u8)
            .collect();
        let got: Vec<u8> = validity.iter().map(|&b| (b != 0) as u8).collect();
        if got != expected {
            return Err(format!(
                "validity.bin differs: got {got:?}, expected {expected:?}"
            ));
        }
    }
    if field["cell_val_num"] == Value::String("var".into()) {
        let offsets_raw = file("offsets.bin")?;
        let offsets: Vec<u64> = offsets_raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let expected_offsets: Vec<u64> = field["offsets"]
            .as_array()
            .ok_or("no expected offsets")?
            .iter()
            .map(|v| v.as_u64().unwrap_or(0))
            .collect();
        if offsets != expected_offsets {
            return Err(format!(
                "offsets.bin differs: got {offsets:?}, expected {expected_offsets:?}"
            ));
        }
        if let Some(total) = field["var_bytes"].as_u64() {
            if data.len() as u64 != total {
                return Err(format!(
                    "values.bin has {} bytes, expected {total}",
                    data.len()
                ));
            }
        }
        for (i, v) in values.iter().enumerate() {
            let start = offsets[i] as usize;
            let end = offsets.get(i + 1).map_or(data.len(), |&o| o as usize);
            let got = data
                .get(start..end)
                .ok_or(format!("cell {i}: offsets out of range"))?;
            if v.is_null() {
                continue;
            }
            let want = cell_bytes(v, datatype)?;
            if got != want.as_slice() && !(want.is_empty() && got == empty_var) {
                return Err(format!("cell {i}: got {got:?}, expected {want:?} ({v})"));
            }
        }
    } else {
        let cell_size = data.len().checked_div(cells).unwrap_or(0);
        if cells > 0 && !data.len().is_multiple_of(cells) {
            return Err(format!(
                "values.bin has {} bytes for {cells} cells",
                data.len()
            ));
        }
        for (i, v) in values.iter().enumerate() {
            if v.is_null() {
                continue;
            }
            let got = &data[i * cell_size..(i + 1) * cell_size];
            let want = cell_bytes(v, datatype)?;
            if !same_float_bits(got, &want, datatype) || got.len() != want.len() {
                return Err(format!("cell {i}: got {got:?}, expected {want:?} ({v})"));
            }
        }
    }
    Ok(())
}

/// Lists the whole tree and reads every JSON file (what `ls -R` and `info` do).
pub fn walk_tree(view: &dyn FileTree) -> Result<usize, String> {
    let mut stack = vec![ROOT];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in view.list(dir).map_err(|e| format!("{e}"))? {
            // The merged view is checked against TileDB's own reads (tests/merged.rs),
            // which include states TileDB cannot read either.
            if dir == ROOT && (e.name == "latest" || e.name == "at") {
                continue;
            }
            if e.is_dir() {
                stack.push(e.ino);
            } else {
                let size = view
                    .size(e.ino)
                    .map_err(|err| format!("{}: {err}", e.name))?;
                if e.name.ends_with(".json") {
                    let bytes = view
                        .read_at(e.ino, 0, size)
                        .map_err(|err| format!("{}: {err}", e.name))?;
                    serde_json::from_slice::<Value>(&bytes)
                        .map_err(|err| format!("{}: {err}", e.name))?;
                }
                files += 1;
            }
        }
    }
    if files == 0 {
        return Err("no file in the tree".into());
    }
    Ok(files)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A temporary folder for tests that make and remove folders by the thousand (fragments,
/// damaged copies, buckets): in memory (`/dev/shm`) where that is a tmpfs with a GiB
/// free, elsewhere the usual temporary folder. On a disk file system folders cost far
/// more: on ext4 mounted with `discard`, making 10,000 fragment folders took 7 s and
/// removing them 30 s; in memory 1.6 s and 4 s.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    // `df` rather than statvfs(3): no unsafe code for a figure read once per test.
    let free = std::process::Command::new("df")
        .args(["--output=fstype,avail", "-B1"])
        .arg(shm)
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut last = text.lines().last()?.split_whitespace();
            let fstype = last.next()?.to_string();
            let avail: u64 = last.next()?.parse().ok()?;
            (fstype == "tmpfs").then_some(avail)
        });
    match free {
        Some(avail) if avail >= 1 << 30 => tempfile::tempdir_in(shm).unwrap(),
        _ => tempfile::tempdir().unwrap(),
    }
}

/// A private copy of fixture `name`, and the folder of its first fragment.
pub fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join(name);
    copy_dir(&fixtures().join(name), &array);
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(fixtures().join(format!("{name}.expected.json"))).unwrap(),
    )
    .unwrap();
    let frag = array.join(expected["fragments"][0]["fragment_dir"].as_str().unwrap());
    (tmp, array, frag)
}

pub fn assert_names(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "error {err:?} does not mention {p:?}");
    }
}

/// Offset of the data of the first chunk of the first tile of a data file.
pub fn first_chunk_data(bytes: &[u8]) -> usize {
    let md_len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    20 + md_len
}

/// Overwrites 8 bytes at the start of the first chunk's data in the tile file `path` (of
/// a fixture copy), so that chunk fails its checksum or its decompression.
pub fn corrupt_first_chunk(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = first_chunk_data(&bytes);
    for b in &mut bytes[at..at + 8] {
        *b = 0xAA;
    }
    std::fs::write(path, bytes).unwrap();
}

/// `fragfs info` names every expected fragment with its format version (from the
/// fragment itself, as the corpus recorded it) and its layout: dense, or where the
/// coordinates are (`coords_file_layout` of formats 1-4: `__coords.tdb` split per tile
/// or zipped).
pub fn check_info(tree: &dyn FileTree, expected: &Value) -> Result<(), String> {
    let info = fragfs::info::render(&tree.info().map_err(|e| e.to_string())?);
    let lines: Vec<&str> = info.lines().collect();
    let fragments = expected["fragments"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if fragments.is_empty() {
        return Err("the expected JSON lists no fragment to find in info".into());
    }
    for ef in fragments {
        let dir = ef["fragment_dir"].as_str().unwrap_or_default();
        let name = dir.rsplit('/').next().unwrap_or(dir);
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with(name))
            .ok_or(format!("info does not list {name}:\n{info}"))?;
        let layout = lines
            .get(at + 1)
            .and_then(|l| l.trim_start().strip_prefix("layout  "))
            .ok_or(format!("info has no layout line after {name}:\n{info}"))?;
        let version = ef["fragment_format_version"].as_u64().unwrap_or(0);
        let mut want = vec![format!("v{version}, ")];
        if ef["type"] == "dense" {
            want.push(", dense".into());
        } else if let Some(coords) = ef["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|f| f["coords_file_layout"].as_str())
        {
            // The corpus README names "split_per_tile"; hand-built v1 fixtures add "zipped".
            let shown = match coords {
                "split_per_tile" => "split per tile",
                "zipped" => "zipped",
                other => return Err(format!("unknown coords_file_layout {other:?}")),
            };
            want.push(format!(", __coords.tdb {shown}"));
        } else {
            want.push(", one file per dimension".into());
        }
        if !layout.starts_with(&want[0]) || !want[1..].iter().all(|w| layout.contains(w)) {
            return Err(format!("{name}: layout {layout:?}, expected {want:?}"));
        }
    }
    Ok(())
}

/// A Python that can import `module`: `FRAGFS_TEST_PYTHON` (set by scripts/test.sh, which
/// installs numpy and TileDB-Py into a venv), else `python3`. Without one the caller
/// skips, saying why, except under CI=true, where that is a failure.
pub fn python_with(module: &str) -> Option<String> {
    let python = std::env::var("FRAGFS_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    let reason = format!("{python} has no {module} (scripts/test.sh installs it in a venv)");
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {reason}");
    }
    skip(&reason);
    None
}

/// A daemon the test started (`fragfs serve`): killed when the test ends, or fails,
/// with it still running, so a failed test leaves no server behind.
pub struct KillOnDrop(pub std::process::Child);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `fragfs serve ARRAY ARGS...` (killed when dropped or when the test fails), once its
/// first door listens: the child, and the address that door's line names
/// (`http http://127.0.0.1:40213/`).
pub fn fragfs_serve(array: &Path, args: &[&str]) -> (KillOnDrop, std::net::SocketAddr) {
    let mut child = KillOnDrop(
        std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .arg("serve")
            .arg(array)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, door_addr(&line))
}

/// The address of a door's readiness line, `<door> <scheme>://<host:port>/...`.
pub fn door_addr(line: &str) -> std::net::SocketAddr {
    let url = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("{line:?}"));
    let hostport = url.split("://").nth(1).and_then(|u| u.split('/').next());
    hostport
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
}

/// The peak resident memory of process `pid` (`VmHWM`), in MiB.
pub fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap();
    kib >> 10
}

/// Writes, with TileDB-Py (`python`), a dense 1-D array at `uri`: `cells` random int64
/// values (numpy seed `seed`) of a ZSTD-filtered attribute `v`, in tiles of `tile`
/// cells, one fragment at timestamp 1. Large files for tests of long reads.
pub fn write_random_int64_array(python: &str, uri: &Path, cells: u64, tile: u64, seed: u64) {
    let script = r#"
import sys, numpy as np, tiledb
uri, cells, tile, seed = sys.argv[1], *map(int, sys.argv[2:5])
dom = tiledb.Domain(tiledb.Dim("x", domain=(0, cells - 1), tile=tile, dtype=np.int64))
schema = tiledb.ArraySchema(domain=dom, sparse=False,
    attrs=[tiledb.Attr("v", dtype=np.int64, filters=[tiledb.ZstdFilter()])])
tiledb.Array.create(uri, schema)
with tiledb.open(uri, "w", timestamp=1) as A:
    A[:] = {"v": np.random.default_rng(seed).integers(0, 2**62, cells)}
"#;
    run_ok(
        std::process::Command::new(python)
            .args(["-c", script])
            .arg(uri)
            .args([cells.to_string(), tile.to_string(), seed.to_string()]),
    );
}

/// The tree `fragfs mount` or `serve` shows of a local array or group, with a cache
/// of `cache_bytes` and every other option at its default.
pub fn open_source_tree(path: &Path, cache_bytes: u64) -> std::sync::Arc<dyn FileTree> {
    fragfs::view::open_source(
        path,
        &Default::default(),
        Default::default(),
        Default::default(),
        cache_bytes,
        None,
    )
    .unwrap()
}

/// Says a check was skipped, and why: printed (libtest shows it with `--nocapture` or
/// on failure) and appended to the file `FRAGFS_SKIP_LOG` names, from which
/// scripts/test.sh counts the skips in its closing line and lists their reasons.
/// A part of a check left out because a tool scripts/test.sh installs is missing: a
/// failure under CI (where the script installed it), else a skip saying so.
pub fn skip_part(reason: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {reason}");
    }
    skip(reason);
}

pub fn skip(reason: &str) {
    println!("SKIP: {reason}");
    if let Some(log) = std::env::var_os("FRAGFS_SKIP_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let test = std::thread::current().name().unwrap_or("?").to_string();
            // One line per skip: scripts/test.sh counts them by lines.
            let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
            let _ = writeln!(f, "{test}: {reason}");
        }
    }
}

/// `dir` (a part of `../shared`) when it exists; otherwise `None`, with a printed SKIP.
/// CI sets `FRAGFS_REQUIRE_CORPUS=1`, where an absent folder is a failure instead.
pub fn shared_or_skip(dir: PathBuf) -> Option<PathBuf> {
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("FRAGFS_REQUIRE_CORPUS").is_none(),
        "FRAGFS_REQUIRE_CORPUS is set but {} is absent",
        dir.display()
    );
    skip(&format!(
        "{} is absent (the shared corpus lives beside the repo)",
        dir.display()
    ));
    None
}

/// The repo fixture `name` and its expected JSON.
pub fn fixture(name: &str) -> (PathBuf, Value) {
    expected_files(&fixtures())
        .into_iter()
        .find(|(a, _)| a.ends_with(name))
        .unwrap_or_else(|| panic!("fixture {name} missing"))
}

/// The cells of a merged read as rows (per field: the cell's bytes, `None` for null),
/// from the files under `prefix` of `tree`.
fn served_rows(
    tree: &dyn Tree,
    prefix: &str,
    read: &Value,
) -> Result<Vec<Vec<Option<Vec<u8>>>>, String> {
    let cells = read["cell_num"].as_u64().unwrap_or(0) as usize;
    let mut rows = vec![Vec::new(); cells];
    for field in read["fields"].as_array().into_iter().flatten() {
        let name = field["name"].as_str().unwrap_or_default();
        let dir = format!("{prefix}/{}", fragfs::view::names::encode(name));
        let values = tree.read(&format!("{dir}/values.bin"))?;
        let valid = if field["nullable"] == Value::Bool(true) {
            Some(tree.read(&format!("{dir}/validity.bin"))?)
        } else {
            None
        };
        let bounds: Vec<usize> = if field["cell_val_num"] == Value::String("var".into()) {
            let mut b: Vec<usize> = tree
                .read(&format!("{dir}/offsets.bin"))?
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()) as usize)
                .collect();
            b.push(values.len());
            b
        } else {
            let size = values.len().checked_div(cells).unwrap_or(0);
            (0..=cells).map(|i| i * size).collect()
        };
        if bounds.len() != cells + 1 {
            return Err(format!(
                "{dir}: {} cells served, {cells} expected",
                bounds.len() - 1
            ));
        }
        for (i, row) in rows.iter_mut().enumerate() {
            let ok = valid.as_ref().is_none_or(|v| v[i] != 0);
            row.push(ok.then(|| values[bounds[i]..bounds[i + 1]].to_vec()));
        }
    }
    Ok(rows)
}

/// The expected rows of a merged read, as [`served_rows`] gives them.
fn expected_rows(read: &Value, empty_var: &[u8]) -> Result<Vec<Vec<Option<Vec<u8>>>>, String> {
    let cells = read["cell_num"].as_u64().unwrap_or(0) as usize;
    let mut rows = vec![Vec::new(); cells];
    for field in read["fields"].as_array().into_iter().flatten() {
        let datatype = field["datatype"].as_str().unwrap_or_default();
        let values = field["values"].as_array().cloned().unwrap_or_default();
        for (i, row) in rows.iter_mut().enumerate() {
            let v = values.get(i).cloned().unwrap_or(Value::Null);
            row.push(match v {
                Value::Null => None,
                v => {
                    let b = cell_bytes(&v, datatype)?;
                    Some(if b.is_empty() { empty_var.to_vec() } else { b })
                }
            });
        }
    }
    Ok(rows)
}

/// Checks every read of a `<array>.merged.json` through `tree`: `latest/` for the read
/// without a timestamp, `at/<T>/` for the others; cell count and every field byte for
/// byte (as a multiset of rows where duplicates are allowed: their order is TileDB's
/// own). Returns the number of reads checked.
pub fn check_merged(tree: &dyn Tree, merged: &Value) -> Result<usize, String> {
    let empty_var = empty_var_bytes(merged);
    let dups = merged["allows_duplicates"] == Value::Bool(true);
    let mut checked = 0;
    for read in merged["reads"].as_array().into_iter().flatten() {
        let prefix = match read["timestamp"].as_u64() {
            None => "latest".to_string(),
            Some(t) => format!("at/{t}"),
        };
        if read.get("error").is_some() {
            // TileDB could not read it: neither may fragfs serve its cells.
            if tree.read(&format!("{prefix}/read.json")).is_ok() {
                return Err(format!(
                    "{prefix}: TileDB failed ({}), fragfs served it",
                    read["error"]
                ));
            }
            checked += 1;
            continue;
        }
        let info: Value = serde_json::from_slice(&tree.read(&format!("{prefix}/read.json"))?)
            .map_err(|e| format!("{prefix}/read.json: {e}"))?;
        let want = read["cell_num"].as_u64().unwrap_or(0);
        if info["cell_count"].as_u64() != Some(want) {
            return Err(format!(
                "{prefix}: {} cells, TileDB read {want}",
                info["cell_count"]
            ));
        }
        if want > 0 && info["non_empty_domain"] != read["non_empty_domain"] {
            return Err(format!(
                "{prefix}: non-empty domain {}, TileDB's {}",
                info["non_empty_domain"], read["non_empty_domain"]
            ));
        }
        if dups {
            // Equal coordinates may come in any order, but the coordinates themselves
            // follow the global order: the dimensions are compared in sequence.
            for field in read["fields"].as_array().into_iter().flatten() {
                if field["role"] == Value::String("dimension".into()) {
                    let name = field["name"].as_str().unwrap_or_default();
                    let dir = format!("{prefix}/{}", fragfs::view::names::encode(name));
                    check_field(tree, &dir, field, &empty_var)
                        .map_err(|e| format!("{dir} (in global order): {e}"))?;
                }
            }
            let mut got = served_rows(tree, &prefix, read)?;
            let mut exp = expected_rows(read, &empty_var)?;
            got.sort();
            exp.sort();
            if got != exp {
                return Err(format!("{prefix}: the cells differ (as a multiset)"));
            }
        } else {
            for field in read["fields"].as_array().into_iter().flatten() {
                let name = field["name"].as_str().unwrap_or_default();
                let dir = format!("{prefix}/{}", fragfs::view::names::encode(name));
                check_field(tree, &dir, field, &empty_var).map_err(|e| format!("{dir}: {e}"))?;
            }
        }
        checked += 1;
    }
    if checked == 0 {
        return Err("the merged JSON lists no read to check".into());
    }
    Ok(checked)
}

/// What a folder holds, per path below it: bytes, size, mode and modification time.
pub type FolderSnapshot = BTreeMap<PathBuf, (Vec<u8>, u64, u32, i64, i64)>;

/// Every file and folder below `root` (at least one file: comparing two empty snapshots
/// would prove nothing), to show that something left the folder as it was.
pub fn folder_snapshot(root: &Path) -> FolderSnapshot {
    let mut out = BTreeMap::new();
    let mut files = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let bytes = if meta.is_file() {
            files += 1;
            std::fs::read(&p).unwrap()
        } else {
            Vec::new()
        };
        let rel = p.strip_prefix(root).unwrap().to_path_buf();
        out.insert(
            rel,
            (
                bytes,
                meta.len(),
                meta.mode(),
                meta.mtime(),
                meta.mtime_nsec(),
            ),
        );
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    assert!(files > 0, "no file below {}", root.display());
    out
}

/// The folder name of the first fragment an expected JSON lists.
pub fn first_fragment(expected: &Value) -> String {
    let dir = expected["fragments"][0]["fragment_dir"]
        .as_str()
        .unwrap_or_else(|| panic!("no fragment in {expected}"));
    dir.rsplit('/').next().unwrap_or(dir).to_string()
}

/// The feature fixture `name` and its expected JSON.
pub fn feature(name: &str) -> (PathBuf, Value) {
    expected_files(&features())
        .into_iter()
        .find(|(a, _)| a.ends_with(name))
        .unwrap_or_else(|| panic!("feature fixture {name} missing"))
}

/// Whether the command-line tool `bin` can run here; when not, says why and skips,
/// except under CI=true, where it must. Found if it starts at all: some tools answer
/// `--version` with their usage and a failing status (`ncdump`).
pub fn tool_available(bin: &str, what: &str) -> bool {
    let ok = std::process::Command::new(bin)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok();
    if ok {
        return true;
    }
    let reason = format!("{bin} is not installed: {what}");
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {reason}");
    }
    skip(&reason);
    false
}

/// Makes `dir` an array of `n` fragments fast, the way a long-lived array gets them: the
/// schema of the fixture `sample` and its first fragment's files, hard-linked into `n`
/// fragment folders named for timestamps `first..first + n` (each with its commit file).
/// `fragfs` reads every one as the fixture's fragment.
pub fn many_fragments(dir: &Path, n: u64, first: u64) {
    many_fragments_from(&fixture("sample").0, dir, n, first)
}

/// [`many_fragments`] with the schema and first fragment of `array`.
pub fn many_fragments_from(array: &Path, dir: &Path, n: u64, first: u64) {
    std::fs::create_dir_all(dir.join("__fragments")).unwrap();
    std::fs::create_dir_all(dir.join("__commits")).unwrap();
    if !dir.join("__schema").exists() {
        copy_dir(&array.join("__schema"), &dir.join("__schema"));
    }
    let mut fragments: Vec<PathBuf> = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fragments.sort();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&fragments[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for t in first..first + n {
        let name = format!("__{t}_{t}_{t:032x}_22");
        let frag = dir.join("__fragments").join(&name);
        std::fs::create_dir(&frag).unwrap();
        for f in &mut files {
            let to = frag.join(f.file_name().unwrap());
            match std::fs::hard_link(&*f, &to) {
                // Another file system than the fixture's, or its limit of links to one
                // file (65,000 on ext4): a copy is linked from then on.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMLINK | libc::EXDEV)) => {
                    std::fs::copy(&*f, &to).unwrap();
                    *f = to;
                }
                linked => linked.unwrap(),
            }
        }
        std::fs::write(dir.join("__commits").join(format!("{name}.wrt")), b"").unwrap();
    }
}

/// Runs `work` on every item, `workers` at a time, and sums the pairs it returns. The
/// corpus checks hand each batch of mounts to one Python process, which keeps one core
/// busy: two batches at once keep both.
pub fn sum_in_parallel<T: Sync>(
    items: &[T],
    workers: usize,
    work: impl Fn(&T) -> (usize, usize) + Sync,
) -> (usize, usize) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut sum = (0, 0);
                    while let Some(item) =
                        items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        let (a, b) = work(item);
                        sum = (sum.0 + a, sum.1 + b);
                    }
                    sum
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .fold((0, 0), |s, x| (s.0 + x.0, s.1 + x.1))
    })
}

/// Mounts arrays a batch at a time (in-process mounts, so a check costs no daemon) and
/// runs the reader checker `script` (tests/check_*.py) over each batch: one Python
/// process a batch, two batches at once (see [`sum_in_parallel`]). The batches are of
/// `merged` (the arrays with TileDB's merged reads), each mounted with the key its entry
/// of `expected` names. The checker gets a JSON list with one entry per array,
/// `{"mount", "array", "merged" (the path of its merged JSON), "key"}` and the keys of
/// the object `extra(i, merged json)` returns for the i-th array of `merged` (`None`
/// leaves the array out). It must succeed; returns what it printed, every batch's in
/// turn, and how many arrays it was given.
pub fn check_in_batches(
    python: &str,
    script: &str,
    merged: &[(PathBuf, Value)],
    expected: &[(PathBuf, Value)],
    extra: impl Fn(usize, &Value) -> Option<Value> + Sync,
) -> (String, usize) {
    let script = repo().join("tests").join(script);
    let indexed: Vec<(usize, &(PathBuf, Value))> = merged.iter().enumerate().collect();
    let batches: Vec<_> = indexed.chunks(32).collect();
    let printed = std::sync::Mutex::new(Vec::new());
    let (given, _) = sum_in_parallel(&batches, 2, |&batch| {
        let jsons = tempfile::tempdir().unwrap();
        let mut mounts = Vec::new();
        let mut specs = Vec::new();
        for (i, (array, m)) in batch {
            let Some(Value::Object(extra)) = extra(*i, m) else {
                continue;
            };
            let options = expected
                .iter()
                .find(|(a, _)| a == array)
                .map(|(_, e)| e.clone())
                .unwrap_or(Value::Null);
            let path = jsons.path().join(format!("{i}.merged.json"));
            std::fs::write(&path, serde_json::to_vec(m).unwrap()).unwrap();
            let mount = mounting::InProcess::new(array, &options, 16 << 20, 2);
            let mut spec = serde_json::json!({
                "mount": mount.path(),
                "array": array,
                "merged": path,
                "key": options["encryption"]["key"],
            });
            spec.as_object_mut().unwrap().extend(extra);
            specs.push(spec);
            mounts.push(mount);
        }
        let spec = jsons.path().join("spec.json");
        std::fs::write(&spec, serde_json::to_vec(&specs).unwrap()).unwrap();
        let stdout = run_ok(std::process::Command::new(python).arg(&script).arg(&spec));
        printed.lock().unwrap().push(stdout);
        (specs.len(), 0)
    });
    (printed.into_inner().unwrap().concat(), given)
}

/// Runs the Python source `script` with `python` and `args` ([`run_ok`]).
pub fn run_python(python: &str, script: &str, args: &[&Path]) -> String {
    run_ok(
        std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .args(args),
    )
}

/// Runs `check` on every array of the shared corpus (with its merged truth, where there
/// is one), `workers` at a time, and fails listing every array whose check failed.
/// Skips, saying why, without the corpus; returns how many arrays were checked.
pub fn check_corpus_arrays(
    workers: usize,
    check: impl Fn(&Path, &Value, Option<&Value>) -> Result<(), String> + Sync,
) -> usize {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return 0;
    };
    let (arrays, merged) = corpus_files(&corpus);
    assert_eq!(arrays.len(), 525);
    check_each(&arrays, &merged, workers, check)
}

/// [`check_corpus_arrays`] of the [`corpus_sample`].
pub fn check_corpus_sample(
    workers: usize,
    check: impl Fn(&Path, &Value, Option<&Value>) -> Result<(), String> + Sync,
) -> usize {
    let Some(corpus) = shared_or_skip(shared_corpus()) else {
        return 0;
    };
    let (arrays, merged) = corpus_sample(&corpus);
    check_each(&arrays, &merged, workers, check)
}

/// Runs `check` on each of `arrays` with its merged JSON, where `merged` has one;
/// fails listing every array whose check failed. Returns how many were checked.
fn check_each(
    arrays: &[(PathBuf, Value)],
    merged: &[(PathBuf, Value)],
    workers: usize,
    check: impl Fn(&Path, &Value, Option<&Value>) -> Result<(), String> + Sync,
) -> usize {
    let merged: std::collections::HashMap<_, _> = merged.iter().cloned().collect();
    let failures = std::sync::Mutex::new(Vec::new());
    sum_in_parallel(arrays, workers, |(array, expected)| {
        if let Err(e) = check(array, expected, merged.get(array)) {
            failures
                .lock()
                .unwrap()
                .push(format!("{}: {e}", array.display()));
        }
        (0, 0)
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    arrays.len()
}
