//! What people's arrays hold besides cells, each checked against what TileDB-Py returns
//! for the same thing (the JSON files `scripts/make_feature_fixtures.py` wrote): groups
//! (nested, SOMA experiments) with their members and metadata, array metadata of every
//! datatype (overwritten, deleted, consolidated, vacuumed keys), enumerations (extended by
//! schema evolution) and the labels they give codes, dimension labels, and delete
//! conditions as text. Through `fragfs cat`'s tree and through a real mount. Bad input
//! (a missing group member, a corrupt `__meta` file, an enumeration cut short) is one
//! clear error naming the file while the rest is served.

mod common;

use std::path::Path;

use common::mounting::*;
use common::*;
use fragfs::array::OpenOptions;
use fragfs::view::{open_tree, ChunkOptions, FileTree};
use serde_json::Value;

/// The tree of any input (array or group), as `fragfs cat` reads it.
fn tree(path: &Path) -> Input {
    Input(
        open_tree(
            path,
            OpenOptions::default(),
            ChunkOptions::default(),
            16 << 20,
        )
        .unwrap(),
    )
}

/// A tree, read as the checkers read trees.
struct Input(std::sync::Arc<dyn FileTree>);

impl std::ops::Deref for Input {
    type Target = dyn FileTree;
    fn deref(&self) -> &(dyn FileTree + 'static) {
        &*self.0
    }
}

impl Tree for Input {
    fn fragments(&self) -> Result<Vec<String>, String> {
        (*self.0).fragments()
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        Tree::read(&*self.0, path)
    }
}

fn json_at(tree: &dyn Tree, path: &str) -> Result<Value, String> {
    serde_json::from_slice(&tree.read(path)?).map_err(|e| format!("{path}: {e}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        out.extend(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// The bytes a `metadata.json` value stands for, by its datatype.
fn metadata_bytes(datatype: &str, value: &Value) -> Vec<u8> {
    match (datatype, value) {
        ("BLOB" | "GEOM_WKB" | "ANY", Value::String(s)) => base64_decode(s),
        (_, Value::String(s)) if !s.starts_with("NaN") && !s.contains("Infinity") => {
            s.as_bytes().to_vec()
        }
        (_, Value::Object(o)) => base64_decode(o["base64"].as_str().unwrap_or_default()),
        (_, Value::Array(items)) => items
            .iter()
            .flat_map(|v| metadata_bytes(datatype, v))
            .collect(),
        ("BOOL", Value::Bool(b)) => vec![u8::from(*b)],
        (t, v) => {
            let as_json = match v {
                Value::String(s) => Value::String(s.clone()),
                v => v.clone(),
            };
            let t = if t.starts_with("DATETIME_") || t.starts_with("TIME_") {
                "INT64"
            } else {
                t
            };
            cell_bytes(&as_json, t).unwrap_or_else(|e| panic!("{datatype} {v}: {e}"))
        }
    }
}

/// `metadata.json` as served equals the metadata TileDB-Py read (key, datatype, and
/// the value's bytes).
fn check_metadata(served: &Value, expected: &Value, what: &str) {
    let served = served
        .as_object()
        .unwrap_or_else(|| panic!("{what}: {served}"));
    let expected = expected.as_object().unwrap();
    let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(served), keys(expected), "{what}: keys");
    for (k, want) in expected {
        let got = &served[k];
        assert_eq!(got["datatype"], want["datatype"], "{what}: {k}");
        let t = want["datatype"].as_str().unwrap();
        assert_eq!(
            hex(&metadata_bytes(t, &got["value"])),
            want["bytes_hex"].as_str().unwrap(),
            "{what}: {k} = {}",
            got["value"]
        );
    }
}

/// A group (the `root` of a `.group.json`, or a nested member's `group`) as served under
/// `prefix`: its members, which of them are folders, its metadata, recursively.
fn check_group(t: &dyn Tree, prefix: &str, expected: &Value) -> usize {
    let at = |p: &str| {
        if prefix.is_empty() {
            p.to_string()
        } else {
            format!("{prefix}/{p}")
        }
    };
    let served = json_at(t, &at("group.json")).unwrap();
    check_metadata(
        &served["metadata"],
        &expected["metadata"],
        &at("group.json"),
    );
    check_metadata(
        &json_at(t, &at("metadata.json")).unwrap(),
        &expected["metadata"],
        &at("metadata.json"),
    );
    let members = expected["members"].as_object().unwrap();
    let listed = served["members"].as_array().unwrap();
    assert_eq!(listed.len(), members.len(), "{prefix}: members");
    let mut checked = 1;
    for (name, m) in members {
        let s = listed
            .iter()
            .find(|s| s["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{prefix}: member {name} not in group.json"));
        assert_eq!(s["uri"], m["stored_uri"], "{prefix}/{name}");
        assert_eq!(s["relative"], m["relative"], "{prefix}/{name}");
        assert_eq!(s["type"], m["type"], "{prefix}/{name}");
        let inside = !m["path_from_group"]
            .as_str()
            .unwrap_or("..")
            .starts_with("..");
        let shown = inside && m["exists"] == true;
        assert_eq!(s["shown_as"].is_string(), shown, "{prefix}/{name}: {s}");
        assert_eq!(
            s["not_shown_because"].is_string(),
            !shown,
            "{prefix}/{name}"
        );
        let folder = at(name);
        match (shown, m["type"].as_str()) {
            (true, Some("group")) => checked += check_group(t, &folder, &m["group"]),
            (true, _) => {
                json_at(t, &format!("{folder}/array.json")).unwrap();
            }
            (false, _) => assert!(t.read(&format!("{folder}/array.json")).is_err()),
        }
    }
    checked
}

fn group_json(name: &str) -> Value {
    let path = features().join(format!("{name}.group.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn groups_show_their_members_and_metadata_as_tiledb_lists_them() {
    for name in ["group_nested", "group_missing_member"] {
        let expected = group_json(name);
        let t = tree(&features().join(name));
        let groups = check_group(&t, "", &expected["root"]);
        assert!(groups >= 1);
        // `info` names every member and the metadata.
        let info = fragfs::info::render(&t.info().unwrap());
        for member in expected["root"]["members"].as_object().unwrap().keys() {
            assert!(info.contains(member.as_str()), "{info}");
        }
    }
}

#[test]
fn groups_read_the_same_through_a_mount() {
    if !fuse_available("groups through the mount") {
        return;
    }
    let expected = group_json("group_nested");
    let m = TreeMount::new(tree(&features().join("group_nested")).0);
    let groups = check_group(&Mounted(m.path().to_path_buf()), "", &expected["root"]);
    assert!(groups >= 2, "nested groups checked: {groups}");
    // A member array's whole tree is there, merged view included.
    assert!(m.path().join("dense_a/latest/read.json").is_file());
}

#[test]
fn a_soma_experiment_is_a_group_of_groups_of_arrays_with_enumerations() {
    let soma: Value = serde_json::from_slice(
        &std::fs::read(features().join("soma_experiment.soma.json")).unwrap(),
    )
    .unwrap();
    let t = tree(&features().join("soma_experiment"));
    check_group(&t, "", &soma["root"]);
    // The dataframes' per-fragment and merged files equal TileDB's reads.
    for (array, expected) in expected_files(&features()) {
        let rel = array.strip_prefix(features().join("soma_experiment"));
        let Ok(rel) = rel else { continue };
        let rel = rel.to_string_lossy().into_owned();
        let sub = SubTree(&*t.0, rel.clone());
        check_tree(&sub, &expected).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let merged: Value = serde_json::from_slice(
            &std::fs::read(array.with_extension("merged.json")).unwrap_or_else(|_| {
                std::fs::read(features().join(format!(
                    "soma_experiment.{}.merged.json",
                    rel.replace('/', ".")
                )))
                .unwrap()
            }),
        )
        .unwrap();
        check_merged(&sub, &merged).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
    // obs has enumerated columns: their folders have enumeration/, and the text shows
    // labels.
    let obs = t.resolve("obs/latest").unwrap();
    let fields: Vec<String> = t.list(obs).unwrap().into_iter().map(|e| e.name).collect();
    let enumerated = fields
        .iter()
        .filter(|f| {
            t.resolve(&format!("obs/latest/{f}/enumeration/enumeration.json"))
                .is_ok()
        })
        .count();
    assert!(enumerated >= 1, "{fields:?}");
}

/// A tree seen from one of its folders.
struct SubTree<'a>(&'a dyn FileTree, String);

impl Tree for SubTree<'_> {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let dir = self
            .0
            .resolve(&format!("{}/fragments", self.1))
            .map_err(|e| e.to_string())?;
        Ok(self
            .0
            .list(dir)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|e| e.name)
            .collect())
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let node = self
            .0
            .resolve(&format!("{}/{path}", self.1))
            .map_err(|e| e.to_string())?;
        read_all(self.0, node).map_err(|e| e.to_string())
    }
}

#[test]
fn array_metadata_of_every_datatype_as_tiledb_reads_it() {
    for name in ["metadata_types", "metadata_vacuumed"] {
        let expected: Value = serde_json::from_slice(
            &std::fs::read(features().join(format!("{name}.meta.json"))).unwrap(),
        )
        .unwrap();
        let t = tree(&features().join(name));
        check_metadata(
            &json_at(&t, "metadata.json").unwrap(),
            &expected["metadata"],
            name,
        );
        let info = fragfs::info::render(&t.info().unwrap());
        assert!(info.contains("metadata"), "{info}");
    }
}

/// Text of an expected enumeration value or label.
fn label(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn enumerations_and_the_labels_they_give_codes() {
    for name in ["enumerations", "enumerations_wallclock", "from_pandas"] {
        let path = features().join(format!("{name}.enumerations.json"));
        let expected: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let t = tree(&features().join(name));
        for state in expected["states"].as_array().unwrap() {
            if state.get("error").is_some() || state.get("labels").is_none() {
                continue;
            }
            let prefix = match state["timestamp"].as_u64() {
                None => "latest".to_string(),
                Some(t) => format!("at/{t}"),
            };
            for (attr, enumeration) in state["schema_attributes"].as_object().unwrap() {
                let e = &state["enumerations"][enumeration.as_str().unwrap()];
                let dir = format!("{prefix}/{attr}/enumeration");
                let values =
                    String::from_utf8(Tree::read(&t, &format!("{dir}/values.txt")).unwrap())
                        .unwrap();
                let want: String = e["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| label(v) + "\n")
                    .collect();
                assert_eq!(values, want, "{name} {dir}");
                let info = json_at(&t, &format!("{dir}/enumeration.json")).unwrap();
                assert_eq!(info["name"], *enumeration, "{name} {dir}");
                assert_eq!(info["datatype"], e["datatype"], "{name} {dir}");
                assert_eq!(info["ordered"], e["ordered"], "{name} {dir}");
                // The attribute's text shows labels (its values.bin keeps the codes).
                let text = String::from_utf8(
                    Tree::read(&t, &format!("{prefix}/{attr}/values.txt")).unwrap(),
                )
                .unwrap();
                let want: String = state["labels"][attr]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| label(v) + "\n")
                    .collect();
                assert_eq!(text, want, "{name} {prefix}/{attr}/values.txt");
            }
        }
    }
    // Codes outside the enumeration are shown as numbers and flagged in tiles.json.
    let t = tree(&features().join("enumerations_bad_code"));
    let frag = t.list(t.resolve("fragments").unwrap()).unwrap()[0]
        .name
        .clone();
    let tiles = json_at(&t, &format!("fragments/{frag}/tiles.json")).unwrap();
    let flagged: u64 = tiles["fields"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|tiles| tiles.as_array().unwrap().iter())
        .filter_map(|tile| tile["codes_outside_enumeration"].as_u64())
        .sum();
    assert!(flagged > 0, "{tiles}");
}

#[test]
fn dimension_labels_are_arrays_of_their_own_under_labels() {
    let expected: Value = serde_json::from_slice(
        &std::fs::read(features().join("dimension_labels.labels.json")).unwrap(),
    )
    .unwrap();
    let t = tree(&features().join("dimension_labels"));
    let schema = json_at(&t, "schema.json").unwrap();
    for want in expected["labels"].as_array().unwrap() {
        let name = want["name"].as_str().unwrap();
        let got = schema["dimension_labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("schema.json has no label {name}"));
        assert_eq!(got["dimension_index"], want["dim_index"]);
        assert_eq!(got["order_name"], want["order"]);
        assert_eq!(got["datatype"], want["label_datatype"]);
        assert_eq!(got["uri"], want["uri"]);
        // The label array's tree, with the values TileDB read through the label.
        let values = Tree::read(&t, &format!("labels/{name}/latest/label/values.txt")).unwrap();
        let lines: Vec<String> = String::from_utf8(values)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        let through = want["read_through_label"]["result"][name]
            .as_array()
            .unwrap();
        for v in through {
            let text = match v {
                Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
                    format!("{}", n.as_f64().unwrap())
                }
                other => label(other),
            };
            assert!(
                lines.contains(&text),
                "labels/{name}: {text} not in {lines:?}"
            );
        }
    }
    // Each label array also matches TileDB's per-fragment reads.
    for (array, expected) in expected_files(&features()) {
        if let Ok(rel) = array.strip_prefix(features().join("dimension_labels/__labels")) {
            let l = if rel.to_string_lossy() == "l0" {
                "depth_m"
            } else {
                "station"
            };
            check_tree(&SubTree(&*t.0, format!("labels/{l}")), &expected).unwrap();
        }
    }
}

/// A folder whose sub-folders are known from the schema alone reports them in `nlink`
/// (2 + sub-folders, as `find` and `ls` expect): the root (`schemas`, `fragments`,
/// `latest`, `at`, `labels`, `zarr`), `labels/` and a field folder with `enumeration/`.
/// Parents of nodes inside a label's tree lead back through the label's folder.
#[test]
fn folders_count_their_sub_folders_and_subtrees_lead_back_to_their_parents() {
    let subfolders = |t: &Input, path: &str| -> u32 {
        let dir = t.resolve(path).unwrap();
        let count = t.list(dir).unwrap().iter().filter(|e| e.is_dir()).count();
        assert!(count > 0, "{path} has sub-folders");
        count as u32
    };
    let t = tree(&features().join("dimension_labels"));
    for path in ["", "labels"] {
        let ino = t.resolve(path).unwrap();
        assert_eq!(
            t.stat(ino).unwrap().nlink,
            2 + subfolders(&t, path),
            "/{path}"
        );
    }
    let root = t.list(fragfs::view::ROOT).unwrap();
    assert!(root.iter().any(|e| e.name == "labels"));
    let inner = t.resolve("labels/depth_m/latest/label").unwrap();
    let latest = t.parent(inner).unwrap();
    assert_eq!(latest, t.resolve("labels/depth_m/latest").unwrap());
    let label = t.parent(latest).unwrap();
    assert_eq!(label, t.resolve("labels/depth_m").unwrap());
    assert_eq!(t.parent(label).unwrap(), t.resolve("labels").unwrap());

    let e = tree(&features().join("enumerations"));
    let with_labels = e
        .list(e.resolve("latest").unwrap())
        .unwrap()
        .into_iter()
        .filter(|f| f.is_dir())
        .find(|f| {
            e.list(f.ino)
                .unwrap()
                .iter()
                .any(|x| x.name == "enumeration")
        })
        .expect("an enumerated attribute in latest/");
    assert_eq!(e.stat(with_labels.ino).unwrap().nlink, 3);
}

/// TileDB-Py's condition syntax as fragfs writes conditions: `=`, `AND`/`OR`, `IN (..)`,
/// `IS NULL`, single quotes. Only syntax changes; a different condition stays different.
fn normalised(python: &str) -> String {
    let mut s = python
        .replace("==", "=")
        .replace(" and ", " AND ")
        .replace(" or ", " OR ")
        .replace(" not in ", " NOT IN ")
        .replace(" in ", " IN ")
        .replace('[', "(")
        .replace(']', ")")
        .replace("= None", "IS NULL")
        .replace("!IS NULL", "IS NOT NULL")
        .replace('"', "'");
    s = s.replace("! =", "!=");
    s
}

#[test]
fn delete_conditions_are_shown_as_the_user_wrote_them() {
    for name in [
        "delete_conditions",
        "deletes_consolidated",
        "merge_deletes_consolidated",
    ] {
        let (array, expected) = feature(name);
        let t = tree(&array);
        let served = json_at(&t, "array.json").unwrap();
        let deletes = served["deletes"].as_array().unwrap();
        for want in expected["deletes"].as_array().unwrap() {
            let ts = &want["timestamp"];
            let got = deletes
                .iter()
                .find(|d| d["timestamp"] == *ts)
                .unwrap_or_else(|| panic!("{name}: no delete at {ts}: {deletes:?}"));
            let text = got["condition"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {got}"));
            let python = want["condition"].as_str().unwrap();
            // TileDB pushes `not` into the comparison (not (f > 1.0) is f <= 1.0).
            let want_text = match python {
                "not (f > 1.0)" => "f <= 1.0".to_string(),
                p => normalised(p),
            };
            assert_eq!(text, want_text, "{name}: delete at {ts} ({python})");
        }
        let info = fragfs::info::render(&t.info().unwrap());
        assert!(info.contains("deletes"), "{info}");
    }
}

#[test]
fn bad_input_is_one_clear_error_and_the_rest_is_served() {
    // A corrupt __meta file: metadata.json fails naming it; the cells are served.
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("m");
    copy_dir(&features().join("metadata_types"), &copy);
    // The consolidated file: the one no .vac file lists (TileDB skips those listed).
    let files: Vec<_> = std::fs::read_dir(copy.join("__meta"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let vacuumed: String = files
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".vac"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let meta = files
        .iter()
        .find(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            !name.ends_with(".vac") && !vacuumed.contains(name)
        })
        .unwrap()
        .clone();
    let bytes = std::fs::read(&meta).unwrap();
    std::fs::write(&meta, &bytes[..bytes.len() / 2]).unwrap();
    let t = tree(&copy);
    let err = Tree::read(&t, "metadata.json").unwrap_err();
    assert!(
        err.contains(meta.file_name().unwrap().to_str().unwrap()),
        "{err}"
    );
    assert!(Tree::read(&t, "schema.json").is_ok());
    // An enumeration file cut short: the enumerated attribute's labels fail naming the
    // file; its codes and the other attributes are served.
    let copy = tmp.path().join("e");
    copy_dir(&features().join("enumerations"), &copy);
    let dir = copy.join("__schema/__enumerations");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() / 2]).unwrap();
    }
    let t = tree(&copy);
    let err = Tree::read(&t, "latest/color/values.txt").unwrap_err();
    assert!(err.contains("__enumerations"), "{err}");
    assert!(Tree::read(&t, "latest/color/values.bin").is_ok());
    assert!(Tree::read(&t, "latest/x/values.txt").is_ok());
    // A group whose members were deleted: listed with the reason, not shown; the rest is.
    let t = tree(&features().join("group_missing_member"));
    let g = json_at(&t, "group.json").unwrap();
    let gone: Vec<&Value> = g["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["not_shown_because"].is_string())
        .collect();
    assert!(gone.len() >= 2, "{g}");
    assert!(json_at(&t, "present/array.json").is_ok());
}

/// A number the kernel holds inside a dimension label's tree stays in use in both
/// tables (the array's and the label's own): a walk of 70,000 other paths of the label,
/// more than the label's tree keeps idle, does not drop it; given back, it may go.
#[test]
fn numbers_held_inside_a_label_stay_in_use_in_the_label_s_tree() {
    let t = tree(&features().join("dimension_labels"));
    let labels = t.list(t.resolve("labels").unwrap()).unwrap();
    let label = &labels.first().expect("a label").name;
    let held = t.resolve(&format!("labels/{label}/schema.json")).unwrap();
    assert!(t.remember(held));
    let want = read_all(&*t, held).unwrap();
    for n in 1..=70_000u64 {
        t.resolve(&format!("labels/{label}/at/{n}")).unwrap();
    }
    assert_eq!(read_all(&*t, held).unwrap(), want, "held: still in use");
    t.forget(held, 1);
    for n in 70_001..=140_000u64 {
        t.resolve(&format!("labels/{label}/at/{n}")).unwrap();
    }
    assert!(
        read_all(&*t, held).is_err(),
        "given back and idle long: dropped"
    );
}

/// `schema.json` is the schema TileDB opens the array with: the last by name. The
/// evolution of `enumerations` has timestamp 2, so its file `__2_2_*` is numerically
/// older than the creation schema's wall-clock name but sorts after it (the largest end
/// timestamp picked the creation schema before).
#[test]
fn schema_json_is_the_schema_tiledb_opens_last_by_name() {
    let t = tree(&features().join("enumerations"));
    let schema = json_at(&t, "schema.json").unwrap();
    let evolved = "__2_2_62148a06ebe5c5e78dd2e709870a99fc";
    assert_eq!(
        json_at(&t, &format!("schemas/{evolved}.json")).unwrap(),
        schema,
        "schema.json is the evolved schema"
    );
}
