//! A TileDB-SOMA experiment whose categorical columns grew over several writes
//! (`tests/fixtures/soma/`, written by tiledbsoma through `scripts/make_soma_fixtures.sh`).
//! tiledbsoma extends an enumeration by a schema evolution at the write's own timestamp
//! while the fragment's footer names the schema from before: fragfs must take each
//! fragment's labels from the schema TileDB opens the array with at the fragment's end
//! timestamp. Per fragment and per merged state, `<attr>/enumeration/`, the attribute's
//! `values.txt` and `cells.csv` are checked against what TileDB-SOMA
//! (`read().concat()`) and TileDB-Py (`A[:]`, decoding enumerations) read, in the tree and
//! through a real mount; the raw codes (`values.bin`) against TileDB's raw reads.

mod common;

use std::sync::Arc;

use common::mounting::*;
use common::*;
use fragfs::array::OpenOptions;
use fragfs::view::{open_tree, ChunkOptions, FileTree};
use serde_json::Value;

/// The experiment's DataFrames: their folder inside the experiment and `.labels.json`.
fn dataframes() -> Vec<(String, Value)> {
    let soma: Value = serde_json::from_slice(
        &std::fs::read(soma_fixtures().join("experiment.soma.json")).unwrap(),
    )
    .unwrap();
    let arrays = soma["arrays"].as_object().unwrap();
    assert!(arrays.len() >= 2, "obs and var: {arrays:?}");
    arrays
        .iter()
        .map(|(name, files)| {
            let rel = name.strip_prefix("experiment/").unwrap().to_string();
            let labels = soma_fixtures().join(files["labels_json"].as_str().unwrap());
            let labels = serde_json::from_slice(&std::fs::read(labels).unwrap()).unwrap();
            (rel, labels)
        })
        .collect()
}

/// The experiment's tree (a group), as `fragfs cat` reads it.
fn experiment() -> Arc<dyn FileTree> {
    open_tree(
        &soma_fixtures().join("experiment"),
        OpenOptions::default(),
        ChunkOptions::default(),
        16 << 20,
    )
    .unwrap()
}

/// A tree read as the checks read trees (paths start with the DataFrame's folder).
struct InTree(Arc<dyn FileTree>);

impl Tree for InTree {
    fn fragments(&self) -> Result<Vec<String>, String> {
        Tree::fragments(&*self.0)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        Tree::read(&*self.0, path)
    }
}

/// The text of an expected label or value: as `values.txt` shows it.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn lines(values: &[Value]) -> Vec<String> {
    values.iter().map(text).collect()
}

fn read_text(tree: &dyn Tree, path: &str) -> Result<String, String> {
    String::from_utf8(tree.read(path)?).map_err(|e| format!("{path}: {e}"))
}

fn read_json(tree: &dyn Tree, path: &str) -> Result<Value, String> {
    serde_json::from_slice(&tree.read(path)?).map_err(|e| format!("{path}: {e}"))
}

/// The rows of a CSV file (fields may be quoted, `""` inside quotes is a quote).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| {
            let mut fields = vec![String::new()];
            let mut quoted = false;
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        chars.next();
                        fields.last_mut().unwrap().push('"');
                    }
                    '"' => quoted = !quoted,
                    ',' if !quoted => fields.push(String::new()),
                    c => fields.last_mut().unwrap().push(c),
                }
            }
            fields
        })
        .collect()
}

/// What one reader read of a folder (a fragment alone, or a state): per enumerated
/// attribute its labels, cell by cell, and the values of its enumeration.
struct Read {
    who: &'static str,
    labels: Vec<(String, Vec<String>)>,
    enumerations: Vec<(String, Vec<String>)>,
}

/// TileDB-Py's and TileDB-SOMA's reads of one entry of `.labels.json`.
fn reads(entry: &Value) -> [Read; 2] {
    let py = &entry["tiledb_py"];
    assert!(py.get("labels_error").is_none(), "{py}");
    let attrs = py["schema_attributes"].as_object().unwrap();
    assert!(!attrs.is_empty(), "no enumerated attribute: {py}");
    let soma = &entry["tiledbsoma"];
    let mut out = [
        Read {
            who: "TileDB-Py",
            labels: Vec::new(),
            enumerations: Vec::new(),
        },
        Read {
            who: "TileDB-SOMA",
            labels: Vec::new(),
            enumerations: Vec::new(),
        },
    ];
    for (attr, enumeration) in attrs {
        let e = &py["enumerations"][enumeration.as_str().unwrap()]["values"];
        out[0]
            .labels
            .push((attr.clone(), lines(py["labels"][attr].as_array().unwrap())));
        out[0]
            .enumerations
            .push((attr.clone(), lines(e.as_array().unwrap())));
        out[1]
            .labels
            .push((attr.clone(), lines(soma["rows"][attr].as_array().unwrap())));
        out[1].enumerations.push((
            attr.clone(),
            lines(soma["enumerations"][attr].as_array().unwrap()),
        ));
    }
    out
}

/// Checks a fragment or state folder `dir` against both readers' reads of it: each
/// enumerated attribute's `enumeration/values.txt`, `values.txt` and `cells.csv` column,
/// and that the schema `footer.json`/`read.json` (`json`) names for its labels holds the
/// enumeration TileDB read with (as `schemas` of `.labels.json` has it). Returns the
/// number of files checked.
fn check_folder(
    tree: &dyn Tree,
    dir: &str,
    json: &str,
    entry: &Value,
    labels: &Value,
) -> Result<usize, String> {
    let mut checked = 0;
    let info = read_json(tree, &format!("{dir}/{json}"))?;
    let described = match json {
        "footer.json" => &info["derived"]["enumerations"],
        _ => &info["enumerations"],
    };
    let csv = csv_rows(&read_text(tree, &format!("{dir}/cells.csv"))?);
    let header = csv.first().ok_or(format!("{dir}/cells.csv: empty"))?;
    let py = &entry["tiledb_py"];
    for read in reads(entry) {
        for ((attr, want), (_, enumeration)) in read.labels.iter().zip(&read.enumerations) {
            let who = read.who;
            let field = format!("{dir}/{attr}");
            let got: Vec<String> = read_text(tree, &format!("{field}/values.txt"))?
                .lines()
                .map(String::from)
                .collect();
            if got != *want {
                return Err(format!("{field}/values.txt: {got:?}, {who} read {want:?}"));
            }
            let got: Vec<String> = read_text(tree, &format!("{field}/enumeration/values.txt"))?
                .lines()
                .map(String::from)
                .collect();
            if got != *enumeration {
                return Err(format!(
                    "{field}/enumeration/values.txt: {got:?}, {who}'s enumeration {enumeration:?}"
                ));
            }
            let column = header
                .iter()
                .position(|h| h == attr)
                .ok_or(format!("{dir}/cells.csv: no column {attr}: {header:?}"))?;
            let got: Vec<String> = csv[1..].iter().map(|r| r[column].clone()).collect();
            if got != *want {
                return Err(format!(
                    "{dir}/cells.csv column {attr}: {got:?}, {who} read {want:?}"
                ));
            }
            checked += 3;
        }
    }
    for (attr, enumeration) in py["schema_attributes"].as_object().unwrap() {
        let field = format!("{dir}/{attr}");
        let about = read_json(tree, &format!("{field}/enumeration/enumeration.json"))?;
        let named = &described[attr];
        if about["name"] != *enumeration || named["enumeration"] != *enumeration {
            return Err(format!(
                "{field}: enumeration {} ({json}: {named}), TileDB's {enumeration}",
                about["name"]
            ));
        }
        if about["schema"] != named["labels_schema"] {
            return Err(format!(
                "{field}: enumeration.json's schema {}, {json}'s {named}",
                about["schema"]
            ));
        }
        // The schema named holds, as TileDB loads it, the enumeration TileDB read with.
        let file = format!("__schema/{}", text(&named["labels_schema"]));
        let schema = labels["schemas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["schema_file"] == file.as_str())
            .ok_or(format!("{field}: {json} names {file}, not a schema file"))?;
        let held = &schema["enumerations"][enumeration.as_str().unwrap()]["values"];
        let used = &py["enumerations"][enumeration.as_str().unwrap()]["values"];
        if held != used {
            return Err(format!(
                "{field}: {file} holds {held}, TileDB read with {used}"
            ));
        }
        checked += 2;
    }
    Ok(checked)
}

/// Checks every fragment and every state of one DataFrame (`prefix` inside the
/// experiment); returns the number of files checked.
fn check_labels(tree: &dyn Tree, prefix: &str, labels: &Value) -> Result<usize, String> {
    let mut checked = 0;
    let fragments = labels["fragments"].as_array().unwrap();
    assert!(fragments.len() >= 2, "{prefix}: several fragments");
    for entry in fragments {
        let dir = format!("{prefix}/fragments/{}", text(&entry["fragment"]));
        checked += check_folder(tree, &dir, "footer.json", entry, labels)?;
        // The footer itself still names the schema the fragment was written with.
        let footer = read_json(tree, &format!("{dir}/footer.json"))?;
        if footer["array_schema_name"] != entry["array_schema_name"] {
            return Err(format!(
                "{dir}/footer.json: schema {}, TileDB's {}",
                footer["array_schema_name"], entry["array_schema_name"]
            ));
        }
    }
    for entry in labels["states"].as_array().unwrap() {
        let dir = match entry["timestamp"].as_u64() {
            None => format!("{prefix}/latest"),
            Some(t) => format!("{prefix}/at/{t}"),
        };
        checked += check_folder(tree, &dir, "read.json", entry, labels)?;
    }
    Ok(checked)
}

/// The fixture shows what it is for: in every DataFrame some fragment's footer names a
/// schema whose enumerations lack labels the fragment's codes stand for.
fn assert_footers_name_older_schemas(prefix: &str, labels: &Value) {
    let stale = labels["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            let file = format!("__schema/{}", text(&f["array_schema_name"]));
            let own = labels["schemas"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["schema_file"] == file.as_str())
                .unwrap_or_else(|| panic!("{prefix}: no schema {file}"));
            f["tiledb_py"]["enumerations"]
                .as_object()
                .unwrap()
                .iter()
                .any(|(name, e)| own["enumerations"][name]["values"] != e["values"])
        })
        .count();
    assert!(stale >= 1, "{prefix}: no fragment names an older schema");
}

#[test]
fn soma_fragments_and_states_show_the_labels_tiledbsoma_and_tiledb_py_read() {
    let t = InTree(experiment());
    for (prefix, labels) in dataframes() {
        assert_footers_name_older_schemas(&prefix, &labels);
        let checked = check_labels(&t, &prefix, &labels).unwrap_or_else(|e| panic!("{e}"));
        assert!(checked > 0);
    }
}

#[test]
fn soma_codes_stay_raw_and_every_state_merges_as_tiledb_reads_it() {
    let arrays = expected_files(&soma_fixtures());
    assert!(arrays.len() >= 2, "obs and var");
    for (array, expected) in arrays {
        let view = open_view(&array, &expected).unwrap();
        check_tree(&view, &expected).unwrap_or_else(|e| panic!("{}: {e}", array.display()));
        let merged = merged_files(&soma_fixtures())
            .into_iter()
            .find(|(a, _)| *a == array)
            .map(|(_, m)| m)
            .unwrap_or_else(|| panic!("{}: no merged.json", array.display()));
        check_merged(&view, &merged).unwrap_or_else(|e| panic!("{}: {e}", array.display()));
    }
}

#[test]
fn soma_labels_read_the_same_through_a_mount() {
    if !fuse_available("SOMA labels through the mount") {
        return;
    }
    let m = TreeMount::new(experiment());
    let mounted = Mounted(m.path().to_path_buf());
    for (prefix, labels) in dataframes() {
        let checked = check_labels(&mounted, &prefix, &labels).unwrap_or_else(|e| panic!("{e}"));
        assert!(checked > 0);
    }
}
