//! Sparse arrays with the Hilbert cell order (point clouds as PDAL writes them, integer
//! and string dimensions) through the command line: `fragfs ls` lists their merged
//! states and `fragfs cat` serves every field of every state as TileDB read it. (The
//! tree, the mount and the text files check them with the other fixtures.)

mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

fn fragfs(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Whether `served` (a fixed-size field's values.bin) holds the values TileDB read:
/// cell by cell, null cells (`null` in the JSON) excepted, whatever their bytes.
fn same_values(served: &[u8], field: &Value) -> bool {
    let datatype = field["datatype"].as_str().unwrap();
    let values = field["values"].as_array().unwrap();
    let size = served.len().checked_div(values.len()).unwrap_or(0);
    served.len() == size * values.len()
        && values.iter().enumerate().all(|(i, v)| {
            v.is_null() || cell_bytes(v, datatype).unwrap() == served[i * size..(i + 1) * size]
        })
}

#[test]
fn fragfs_cat_serves_every_state_of_a_point_cloud_as_tiledb_reads_it() {
    let mut checked = 0;
    for name in ["pointcloud_versions", "hilbert_ints", "hilbert_mixed"] {
        let array = hilbert_fixtures().join(name);
        let array = array.to_str().unwrap();
        let merged: Value = serde_json::from_slice(
            &std::fs::read(hilbert_fixtures().join(format!("{name}.merged.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(merged["cell_order"], "hilbert");
        let listing = String::from_utf8(fragfs(&["ls", array, "latest"])).unwrap();
        let dups = merged["allows_duplicates"] == Value::Bool(true);
        for read in merged["reads"].as_array().unwrap() {
            let state = match read["timestamp"].as_u64() {
                None => "latest".to_string(),
                Some(t) => format!("at/{t}"),
            };
            for field in read["fields"].as_array().unwrap() {
                let field_name = field["name"].as_str().unwrap();
                assert!(listing.contains(field_name), "{name}: {listing}");
                // With duplicates, equal coordinates may come in any order: only the
                // dimensions (equal within such a run) are compared in sequence.
                if dups && field["role"] != "dimension" {
                    continue;
                }
                if field["cell_val_num"] == "var" {
                    continue;
                }
                let got = fragfs(&["cat", array, &format!("{state}/{field_name}/values.bin")]);
                assert!(
                    same_values(&got, field),
                    "{name}: {state}/{field_name}/values.bin differs from TileDB's read"
                );
                checked += 1;
                if let Some(validity) = field["validity"].as_array() {
                    let got =
                        fragfs(&["cat", array, &format!("{state}/{field_name}/validity.bin")]);
                    let want: Vec<u8> =
                        validity.iter().map(|v| v.as_u64().unwrap() as u8).collect();
                    assert_eq!(got, want, "{name}: {state}/{field_name}/validity.bin");
                }
            }
        }
    }
    assert!(checked > 50, "{checked} files checked");
}

/// A string dimension's cells come out in TileDB's order too: `offsets.bin` and
/// `values.bin` of `latest/name` equal TileDB's read.
#[test]
fn fragfs_cat_serves_a_string_dimension_in_hilbert_order() {
    let array = hilbert_fixtures().join("hilbert_strings");
    let array = array.to_str().unwrap();
    let merged: Value = serde_json::from_slice(
        &std::fs::read(hilbert_fixtures().join("hilbert_strings.merged.json")).unwrap(),
    )
    .unwrap();
    let latest = &merged["reads"][0];
    assert!(latest["timestamp"].is_null());
    let field = latest["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "name")
        .unwrap();
    let cells: Vec<Vec<u8>> = field["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| cell_bytes(v, "STRING_ASCII").unwrap())
        .collect();
    assert!(cells.len() > 50);
    let values = fragfs(&["cat", array, "latest/name/values.bin"]);
    let offsets = fragfs(&["cat", array, "latest/name/offsets.bin"]);
    let starts: Vec<usize> = offsets
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()) as usize)
        .collect();
    assert_eq!(starts.len(), cells.len());
    for (i, want) in cells.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(values.len());
        let got = &values[starts[i]..end];
        // An empty string is stored as TileDB stores it (one NUL byte where it does).
        assert!(
            got == want.as_slice() || (want.is_empty() && got == [0]),
            "cell {i}: {:?}, TileDB read {:?}",
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(want)
        );
    }
}
