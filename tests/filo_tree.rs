//! Filo vectors as files: every sample (the repo's fixtures, and the shared corpus when
//! present) read through the tree that `fragfs cat` uses and through a real mount gives
//! its expected values, validity, zones and text; the fragment directory is served with
//! `fragment.json` and one folder per column.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::mounting::*;
use common::*;
use fragfs::array::OpenOptions;
use fragfs::filo::ColumnType;
use fragfs::filo::FormatVersion;
use fragfs::view::{open_tree, ChunkOptions, FileTree};
use serde_json::Value;

/// Reads a file of the tree, by its path.
type Reader<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, String>;

/// The bytes one expected value takes in `values.bin`.
fn value_bytes(t: ColumnType, v: &Value) -> Vec<u8> {
    let float_bits = |v: &Value| -> Option<u64> {
        let s = v.as_str()?;
        Some(match s {
            "NaN" => f64::NAN.to_bits(),
            "Infinity" => f64::INFINITY.to_bits(),
            "-Infinity" => f64::NEG_INFINITY.to_bits(),
            s => u64::from_str_radix(s.strip_prefix("bits:0x")?, 16).ok()?,
        })
    };
    match t {
        ColumnType::Bool => vec![u8::from(v.as_bool().unwrap())],
        ColumnType::Int => (v.as_i64().unwrap() as i32).to_le_bytes().to_vec(),
        ColumnType::Long | ColumnType::Timestamp | ColumnType::DateTime => {
            v.as_i64().unwrap().to_le_bytes().to_vec()
        }
        ColumnType::Double => match float_bits(v) {
            Some(bits) => bits.to_le_bytes().to_vec(),
            None => v.as_f64().unwrap().to_le_bytes().to_vec(),
        },
        ColumnType::Float => match float_bits(v) {
            Some(bits) if v.as_str().is_some_and(|s| s.starts_with("bits:")) => {
                (bits as u32).to_le_bytes().to_vec()
            }
            Some(bits) => (f64::from_bits(bits) as f32).to_le_bytes().to_vec(),
            None => (v.as_f64().unwrap() as f32).to_le_bytes().to_vec(),
        },
        ColumnType::String | ColumnType::Utf8 => v.as_str().unwrap().as_bytes().to_vec(),
    }
}

/// Checks one column folder against its expected JSON (values, validity, zones).
fn check_column(read: Reader, dir: &str, t: ColumnType, e: &Value) -> Result<(), String> {
    let rows = e["length"].as_u64().unwrap() as usize;
    let validity: Vec<u8> = e["validity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| u8::from(v.as_bool().unwrap()))
        .collect();
    if read(&format!("{dir}/validity.bin"))? != validity {
        return Err("validity.bin differs".into());
    }
    let values = read(&format!("{dir}/values.bin"))?;
    let cells: Vec<Vec<u8>> = match t.elem_size() {
        Some(size) => values.chunks(size).map(<[u8]>::to_vec).collect(),
        None => {
            let offsets: Vec<usize> = read(&format!("{dir}/offsets.bin"))?
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()) as usize)
                .collect();
            let mut bounds = offsets.clone();
            bounds.push(values.len());
            bounds
                .windows(2)
                .map(|w| values[w[0]..w[1]].to_vec())
                .collect()
        }
    };
    if cells.len() != rows {
        return Err(format!(
            "{} rows in values.bin, expected {rows}",
            cells.len()
        ));
    }
    for (i, (got, want)) in cells
        .iter()
        .zip(e["values"].as_array().unwrap())
        .enumerate()
    {
        if validity[i] == 0 {
            if got.iter().any(|&b| b != 0) {
                return Err(format!("NA row {i} holds {got:?}, not the zero fill"));
            }
            continue;
        }
        let want = value_bytes(t, want);
        let same = match t {
            // NaN is NaN whatever its payload bits in the JSON.
            ColumnType::Double => {
                f64::from_le_bytes(got[..].try_into().unwrap()).is_nan()
                    && f64::from_le_bytes(want[..].try_into().unwrap()).is_nan()
                    || *got == want
            }
            ColumnType::Float => {
                f32::from_le_bytes(got[..].try_into().unwrap()).is_nan()
                    && f32::from_le_bytes(want[..].try_into().unwrap()).is_nan()
                    || *got == want
            }
            _ => *got == want,
        };
        if !same {
            return Err(format!("row {i}: got {got:?}, expected {want:?}"));
        }
    }
    if t == ColumnType::DateTime {
        let zones: Vec<u8> = e["tz_quarter_hours"]
            .as_array()
            .unwrap()
            .iter()
            .map(|z| z.as_i64().unwrap_or(0) as i8 as u8)
            .collect();
        if read(&format!("{dir}/timezone.bin"))? != zones {
            return Err("timezone.bin differs".into());
        }
    }
    let text = String::from_utf8(read(&format!("{dir}/values.txt"))?).map_err(|e| e.to_string())?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != rows {
        return Err(format!(
            "values.txt has {} lines for {rows} rows",
            lines.len()
        ));
    }
    for (i, line) in lines.iter().enumerate() {
        if (*line == "NULL") != (validity[i] == 0)
            && t != ColumnType::String
            && t != ColumnType::Utf8
        {
            return Err(format!("values.txt line {i} is {line:?}"));
        }
    }
    if t.elem_size().is_some() {
        let npy = read(&format!("{dir}/values.npy"))?;
        if !npy.starts_with(b"\x93NUMPY") || !npy.ends_with(&values) {
            return Err("values.npy is not a header then values.bin".into());
        }
    }
    Ok(())
}

fn samples(dir: &Path) -> Vec<(PathBuf, ColumnType, Value)> {
    let Ok(bytes) = std::fs::read(dir.join("expected.json")) else {
        return Vec::new();
    };
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let t = ColumnType::from_name(s["column_type"].as_str().unwrap()).unwrap();
            (dir.join(s["file"].as_str().unwrap()), t, s.clone())
        })
        .collect()
}

/// Every sample as a lone chunk: through the tree (`fragfs cat`) and a mount.
fn check_samples(dir: &Path) -> usize {
    let samples = samples(dir);
    let mount = fuse_available("Filo through a mount");
    for (file, t, e) in &samples {
        let chunk = ChunkOptions {
            column_type: Some(*t),
            version: e["format_version"]
                .as_str()
                .and_then(FormatVersion::from_name)
                .unwrap_or_default(),
        };
        let tree = open_tree(file, OpenOptions::default(), chunk, 1 << 20).unwrap();
        let column = file.file_stem().unwrap().to_str().unwrap();
        let via_tree = |p: &str| -> Result<Vec<u8>, String> {
            let node = tree.resolve(p).map_err(|e| e.to_string())?;
            let size = tree.size(node).map_err(|e| e.to_string())?;
            tree.read_at(node, 0, size).map_err(|e| e.to_string())
        };
        check_column(&via_tree, column, *t, e)
            .unwrap_or_else(|err| panic!("{} (tree): {err}", file.display()));
        if mount {
            let m = TreeMount::new(tree.clone());
            let via_mount = |p: &str| std::fs::read(m.path().join(p)).map_err(|e| e.to_string());
            check_column(&via_mount, column, *t, e)
                .unwrap_or_else(|err| panic!("{} (mount): {err}", file.display()));
        }
    }
    samples.len()
}

#[test]
fn repo_fixtures_read_exactly_through_the_tree_and_a_mount() {
    let n = check_samples(&repo().join("tests/fixtures/filo"));
    assert!(n >= 50, "{n} samples");
}

#[test]
fn shared_samples_read_exactly_through_the_tree_and_a_mount() {
    let Some(dir) = shared_or_skip(repo().join("../shared/corpus/filo")) else {
        return;
    };
    assert_eq!(check_samples(&dir), 42);
}

#[test]
fn a_fragment_directory_is_a_tree_of_columns() {
    let dir = repo().join("tests/fixtures/filo/fragment");
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let tree: Arc<dyn FileTree> = open_tree(
        &dir,
        OpenOptions::default(),
        ChunkOptions::default(),
        1 << 20,
    )
    .unwrap();
    let check = |read: Reader| {
        let json: Value = serde_json::from_slice(&read("fragment.json").unwrap()).unwrap();
        let columns = expected["columns"].as_object().unwrap();
        assert_eq!(json["rows"], expected["columns"]["id"]["length"]);
        assert_eq!(json["columns"].as_array().unwrap().len(), columns.len());
        for (name, e) in columns {
            let t = ColumnType::from_name(e["column_type"].as_str().unwrap()).unwrap();
            let shown = json["columns"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name.as_str())
                .unwrap();
            assert_eq!(shown["vector"]["kind"], e["kind"], "{name}");
            assert_eq!(shown["vector"]["header"], e["header"], "{name}");
            check_column(read, &fragfs::view::names::encode(name), t, e)
                .unwrap_or_else(|err| panic!("{name}: {err}"));
        }
    };
    let via_tree = |p: &str| -> Result<Vec<u8>, String> {
        let node = tree.resolve(p).map_err(|e| e.to_string())?;
        tree.read_at(node, 0, u64::MAX).map_err(|e| e.to_string())
    };
    check(&via_tree);
    if fuse_available("Filo fragment mount") {
        let m = TreeMount::new(tree.clone());
        let via_mount = |p: &str| std::fs::read(m.path().join(p)).map_err(|e| e.to_string());
        check(&via_mount);
    }
    // The CLI: info is a table of columns; a lone file needs its type.
    let fragfs = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = fragfs(&["info", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("DiffPrimitiveVector") && info.contains(" rows"),
        "{info}"
    );
    let lone = dir.join("id.filo");
    let out = fragfs(&["ls", lone.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--filo-type"));
    let out = fragfs(&[
        "cat",
        "--filo-type",
        "int",
        lone.to_str().unwrap(),
        "id/values.txt",
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "7\n8\n9\n10\n");
}

#[test]
fn a_corrupt_column_is_an_error_naming_it_and_the_others_still_read() {
    let (tmp, _, _) = copy_fixture("sample");
    let dir = tmp.path().join("filo");
    copy_dir(&repo().join("tests/fixtures/filo/fragment"), &dir);
    std::fs::write(dir.join("ts.filo"), [0xff, 0xff, 0xff]).unwrap();
    let tree = open_tree(
        &dir,
        OpenOptions::default(),
        ChunkOptions::default(),
        1 << 20,
    )
    .unwrap();
    let read = |p: &str| {
        let node = tree.resolve(p)?;
        tree.read_at(node, 0, u64::MAX)
    };
    let err = read("ts/values.bin").unwrap_err().to_string();
    assert!(
        err.contains("column ts") && err.contains("ts.filo"),
        "{err}"
    );
    assert!(read("id/values.bin").is_ok());
    if fuse_available("corrupt Filo column") {
        let m = TreeMount::new(tree.clone());
        let err = std::fs::read(m.path().join("ts/values.bin")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
        let good = std::fs::read(m.path().join("id/values.txt")).unwrap();
        assert_eq!(good, b"7\n8\n9\n10\n");
    }
}

#[test]
fn every_filo_file_reads_the_same_in_small_pieces_as_whole() {
    let dir = repo().join("tests/fixtures/filo/fragment");
    let tree = open_tree(
        &dir,
        OpenOptions::default(),
        ChunkOptions::default(),
        1 << 20,
    )
    .unwrap();
    let mut files = 0;
    for column in tree.list(fragfs::view::ROOT).unwrap() {
        let nodes = if column.is_dir() {
            tree.list(column.ino).unwrap()
        } else {
            vec![column]
        };
        for e in nodes {
            let size = tree.size(e.ino).unwrap();
            let whole = tree.read_at(e.ino, 0, u64::MAX).unwrap();
            assert_eq!(whole.len() as u64, size, "{}", e.name);
            let mut pieces = Vec::new();
            while (pieces.len() as u64) < size {
                pieces.extend(tree.read_at(e.ino, pieces.len() as u64, 5).unwrap());
            }
            assert_eq!(pieces, whole, "{}", e.name);
            files += 1;
        }
    }
    assert!(files > 30, "{files}");
}
