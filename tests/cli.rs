//! The command line without FUSE: `info` is a readable table, `ls -l` shows exact sizes,
//! `cat` writes a file's bytes.

mod common;

use std::process::Command;

use common::*;

fn fragfs(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn info_is_a_readable_table_of_fragments() {
    let sample = fixtures().join("sample");
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("sample.expected.json")).unwrap())
            .unwrap();
    let info = fragfs(&["info", sample.to_str().unwrap()]);
    let header = info
        .lines()
        .find(|l| l.contains("written at"))
        .expect("no table header");
    for column in [
        "name",
        "format",
        "written at (UTC)",
        "type",
        "cells",
        "bytes",
        "non-empty domain",
    ] {
        assert!(header.contains(column), "{header}");
    }
    for f in expected["fragments"].as_array().unwrap() {
        let name = f["fragment"].as_str().unwrap();
        let row = info
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{info}"));
        let domain: Vec<String> = f["non_empty_domain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| format!("{}..{}", d[0], d[1]))
            .collect();
        let t2 = f["timestamp_range"][1].as_u64().unwrap();
        let iso = format!("1970-01-01T00:00:00.{t2:03}Z");
        let cells = f["cell_num"].to_string();
        for part in [
            " 22 ",
            iso.as_str(),
            " dense ",
            cells.as_str(),
            domain.join(", ").as_str(),
        ] {
            assert!(row.contains(part), "{part:?} missing in {row:?}");
        }
    }
    assert!(!info.contains('{'), "no JSON in info:\n{info}");
}

#[test]
/// `ls -l` shows exact sizes, from metadata; text files (`values.txt`, `cells.csv`), whose
/// size is only known once rendered, show 0 (as procfs files do) and `cat` gives them
/// whole.
fn ls_l_and_cat_agree_on_sizes() {
    let sample = fixtures().join("sample");
    let a = sample.to_str().unwrap();
    let listing = fragfs(&["ls", "-lR", a]);
    let mut files = 0;
    let mut dir = String::new();
    for line in listing.lines() {
        if let Some(d) = line.strip_suffix(':') {
            dir = d.trim_start_matches('/').to_string();
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.first() != Some(&"-") {
            continue;
        }
        let path = format!("{dir}/{}", parts[2..].join(" "));
        let size: usize = parts[1].parse().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
            .args(["cat", a, &path])
            .output()
            .unwrap();
        assert!(out.status.success());
        if path.ends_with(".txt") || path.ends_with(".csv") {
            assert_eq!(size, 0, "{path}: a text file not read yet shows 0");
            assert!(
                out.stdout.ends_with(b"\n") && out.stdout.len() > 10,
                "{path}"
            );
        } else if size == 0
            && (path.starts_with("latest/") || path.starts_with("at/"))
            && path.ends_with("/values.bin")
        {
            // A merged var-size field's values: their total needs a pass over the
            // offsets, so the listing shows 0 until a read learns it.
            assert!(!out.stdout.is_empty(), "{path}");
        } else if size == 0 && (path.ends_with("/cells.parquet") || path.ends_with("/cells.arrow"))
        {
            // A table file whose layout needs counts metadata lacks: sized when
            // opened (docs/tables.md), whole when read.
            let magic: &[u8] = if path.ends_with(".parquet") {
                b"PAR1"
            } else {
                b"ARROW1"
            };
            assert!(out.stdout.starts_with(magic), "{path}");
        } else if size == 0 && path.ends_with("/values.png") {
            // A quick look: sized once made (making it decodes tiles, which a
            // listing must not; docs/pictures.md).
            assert!(out.stdout.starts_with(b"\x89PNG\r\n\x1a\n"), "{path}");
        } else if size == 0 && (path.starts_with("zarr/") || path.contains("/zarr/")) {
            // A Zarr chunk of strings or bytes: sized once rendered; it opens with its
            // element count (u32), never 0 (a chunk holds a whole tile).
            let count = out
                .stdout
                .get(..4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()));
            assert!(count.is_some_and(|n| n > 0), "{path}");
        } else {
            assert_eq!(out.stdout.len(), size, "{path}");
        }
        files += 1;
    }
    assert!(files > 20, "{listing}");
}

#[test]
fn info_ls_and_cat_accept_groups() {
    let group = features().join("group_nested");
    let g = group.to_str().unwrap();
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(features().join("group_nested.group.json")).unwrap())
            .unwrap();
    let info = fragfs(&["info", g]);
    assert!(info.starts_with("group"), "{info}");
    let ls = fragfs(&["ls", g]);
    let listed: Vec<&str> = ls.lines().collect();
    for (name, member) in expected["root"]["members"].as_object().unwrap() {
        assert!(info.contains(name.as_str()), "{info}");
        // Members outside the group folder are in group.json, not folders.
        let shown = !member["path_from_group"]
            .as_str()
            .unwrap()
            .starts_with("..");
        assert_eq!(listed.contains(&name.as_str()), shown, "{name}: {ls}");
    }
    // A nested member's own files, by path through the group.
    let nested: serde_json::Value =
        serde_json::from_str(&fragfs(&["cat", g, "level1/group.json"])).unwrap();
    assert!(
        nested["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "sparse_b"),
        "{nested}"
    );
    let array = fragfs(&["cat", g, "dense_a/array.json"]);
    assert!(array.contains("fragments"), "{array}");
    let deep = fragfs(&["ls", g, "level1/level2"]);
    assert!(deep.lines().any(|l| l == "leaf"), "{deep}");
}
