//! Bad input gives a clear error naming fragment, file, tile/chunk and reason; never a
//! panic and never wrong bytes. Each test corrupts a copy of a TileDB-written fixture.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use fragfs::array::generic_tile::decode_generic_tile;
use fragfs::array::OpenOptions;
use fragfs::view::{ArrayTree, FileTree, ROOT};

fn read_field(array: &Path, frag: &Path, field: &str, file: &str) -> fragfs::Result<Vec<u8>> {
    let view = ArrayTree::open_path(array, OpenOptions::default(), 1 << 20)?;
    let name = frag.file_name().unwrap().to_str().unwrap();
    let node = view.resolve(&format!("fragments/{name}/{field}/{file}"))?;
    read_all(&view, node)
}

#[test]
fn truncated_tile_names_fragment_file_and_tile() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    let path = frag.join("a1.tdb");
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let err = read_field(&array, &frag, "f64_zstd", "values.bin")
        .unwrap_err()
        .to_string();
    let name = frag.file_name().unwrap().to_str().unwrap();
    assert_names(&err, &[name, "a1.tdb", "tile ", "truncated"]);
}

#[test]
fn wrong_checksum_is_an_error_not_wrong_bytes() {
    for (field, file) in [("md5_i16", "a4.tdb"), ("sha_gzip_f64", "a5.tdb")] {
        let (_t, array, frag) = copy_fixture("dense_2d");
        let path = frag.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = first_chunk_data(&bytes) + 2;
        bytes[at] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
        let err = read_field(&array, &frag, field, "values.bin")
            .unwrap_err()
            .to_string();
        // MD5 sees altered data; SHA256 sits under GZIP, which may fail first on a
        // flipped bit (its own Adler-32): either way the read fails, naming the chunk.
        assert_names(&err, &[file, "tile 0", "chunk 0"]);
        if field == "md5_i16" {
            assert_names(&err, &["checksum mismatch"]);
        }
    }
}

#[test]
fn absurd_chunk_length_is_refused() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    let path = frag.join("a0.tdb");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes()); // filtered length of chunk 0
    std::fs::write(&path, bytes).unwrap();
    let err = read_field(&array, &frag, "i32", "values.bin")
        .unwrap_err()
        .to_string();
    assert_names(&err, &["a0.tdb", "tile 0", "chunk 0", "chunk claims"]);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes()); // chunk count
    std::fs::write(&path, bytes).unwrap();
    let err = read_field(&array, &frag, "i32", "values.bin")
        .unwrap_err()
        .to_string();
    assert_names(&err, &["a0.tdb", "tile 0", "chunk count"]);
}

#[test]
fn missing_data_file_is_named() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    std::fs::remove_file(frag.join("a2.tdb")).unwrap();
    let err = read_field(&array, &frag, "i64_lz4", "values.bin")
        .unwrap_err()
        .to_string();
    assert_names(&err, &["a2.tdb", "tile 0", "No such file"]);
    // The other fields still read.
    assert!(read_field(&array, &frag, "i32", "values.bin").is_ok());
}

/// Rewrites the schema file through `patch`, stored as an unfiltered generic tile.
fn patch_schema(array: &Path, patch: impl Fn(&mut Vec<u8>)) {
    let dir = array.join("__schema");
    let entry = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file())
        .unwrap();
    let (_, mut payload) = decode_generic_tile(
        &std::fs::read(&entry).unwrap(),
        None,
        &fragfs::error::Place::file("schema"),
    )
    .unwrap();
    patch(&mut payload);
    let mut tile = Vec::new();
    let chunked_len = 8 + 12 + payload.len() as u64;
    tile.extend(22u32.to_le_bytes());
    tile.extend(chunked_len.to_le_bytes());
    tile.extend((payload.len() as u64).to_le_bytes());
    tile.push(4);
    tile.extend(1u64.to_le_bytes());
    tile.push(0);
    tile.extend(8u32.to_le_bytes());
    tile.extend(65536u32.to_le_bytes());
    tile.extend(0u32.to_le_bytes());
    tile.extend(1u64.to_le_bytes());
    tile.extend((payload.len() as u32).to_le_bytes());
    tile.extend((payload.len() as u32).to_le_bytes());
    tile.extend(0u32.to_le_bytes());
    tile.extend(&payload);
    std::fs::write(entry, tile).unwrap();
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

#[test]
fn unknown_filter_id_is_named() {
    let (_t, array, _) = copy_fixture("dense_basic");
    patch_schema(&array, |p| {
        // "f64_zstd", FLOAT64, cell_val_num 1, max chunk size, 1 filter, then the filter id.
        let at = find(p, b"f64_zstd") + 8 + 1 + 4 + 4 + 4;
        assert_eq!(p[at], 2, "ZSTD filter id expected");
        p[at] = 42;
    });
    let err = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20)
        .err()
        .unwrap()
        .to_string();
    assert_names(&err, &["__schema/", "unknown filter id 42"]);
}

#[test]
fn unknown_format_version_is_refused_with_the_range() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    patch_schema(&array, |p| p[..4].copy_from_slice(&24u32.to_le_bytes()));
    let err = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20)
        .err()
        .unwrap()
        .to_string();
    assert_names(&err, &["format version 24", "versions 1 to 23"]);
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(["info", array.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_names(&stderr, &["format version 24", "versions 1 to 23"]);

    // A fragment footer claiming version 99: that fragment fails, naming itself.
    let (_t, array, frag2) = copy_fixture("dense_basic");
    let _ = frag;
    let meta = frag2.join("__fragment_metadata.tdb");
    let mut bytes = std::fs::read(&meta).unwrap();
    let n = bytes.len();
    let footer_len = u64::from_le_bytes(bytes[n - 8..].try_into().unwrap()) as usize;
    let start = n - 8 - footer_len;
    bytes[start..start + 4].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(&meta, bytes).unwrap();
    let view = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20).unwrap();
    let name = frag2.file_name().unwrap().to_str().unwrap();
    let err = view
        .resolve(&format!("fragments/{name}/footer.json"))
        .unwrap_err()
        .to_string();
    assert_names(&err, &[name, "format version 99", "versions 1 to 23"]);
}

#[test]
fn encrypted_array_without_key_says_a_key_is_needed() {
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args(["ls", fixtures().join("encrypted").to_str().unwrap()])
        .env_remove("FRAGFS_ENCRYPTION_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("encryption key is needed"), "{stderr}");
}

/// A missing key and a wrong one are EACCES (the bytes are there; this reader may not
/// decrypt them), the wrong one naming the array and its schema. With the right key, a
/// chunk altered on disk is bad data: EIO, naming file, tile and chunk.
#[test]
fn a_missing_or_wrong_key_is_eacces_and_an_altered_chunk_is_eio() {
    const KEY: [u8; 32] = *b"0123456789abcdeF0123456789abcdeF";
    let (_t, array, frag) = copy_fixture("encrypted");
    let open = |key| ArrayTree::open_path(&array, OpenOptions { key }, 1 << 20);
    let err = open(None).err().unwrap();
    assert_eq!(err.errno(), libc::EACCES, "{err}");
    let mut wrong = KEY;
    wrong[0] ^= 1;
    let err = open(Some(wrong)).err().unwrap();
    assert_eq!(err.errno(), libc::EACCES, "{err}");
    assert_names(
        &err.to_string(),
        &[
            &array.display().to_string(),
            "wrong encryption key",
            "__schema/",
        ],
    );
    let path = frag.join("a0.tdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = first_chunk_data(&bytes);
    bytes[at] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();
    let view = open(Some(KEY)).unwrap();
    let node = view
        .resolve(&format!("fragments/{}/a/values.bin", fragment_name(&frag)))
        .unwrap();
    let err = read_all(&view, node).unwrap_err();
    assert_eq!(err.errno(), libc::EIO, "{err}");
    assert_names(
        &err.to_string(),
        &["a0.tdb", "tile 0", "chunk 0", "AES_256_GCM"],
    );
}

#[test]
fn cat_of_a_corrupt_file_exits_non_zero_with_one_line() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    corrupt_first_chunk(&frag.join("a1.tdb"));
    let name = frag.file_name().unwrap().to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fragfs"))
        .args([
            "cat",
            array.to_str().unwrap(),
            &format!("fragments/{name}/f64_zstd/values.bin"),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_names(&stderr, &[name, "a1.tdb", "tile 0", "chunk 0", "ZSTD"]);
}

#[test]
fn cat_and_view_never_write_inside_the_array() {
    let (_t, array, _) = copy_fixture("sparse_var_nullable");
    let before = folder_snapshot(&array);
    let view = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20).unwrap();
    walk_tree(&view).unwrap();
    let mut stack = vec![ROOT];
    let mut read = 0;
    while let Some(dir) = stack.pop() {
        for e in view.list(dir).unwrap() {
            if e.is_dir() {
                stack.push(e.ino);
            } else {
                read += read_all(&view, e.ino).unwrap().len();
            }
        }
    }
    assert!(read > 0);
    assert!(
        before == folder_snapshot(&array),
        "the array folder changed"
    );
}

fn fragment_name(frag: &Path) -> &str {
    frag.file_name().unwrap().to_str().unwrap()
}

#[test]
fn a_domain_claiming_billions_of_cells_is_an_error_not_an_endless_file() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    // The footer's non-empty domain of x (INT32, [0, 63]): its high end made 2^31 - 1,
    // billions of cells no tile holds.
    let meta = frag.join("__fragment_metadata.tdb");
    let mut bytes = std::fs::read(&meta).unwrap();
    let domain = [0i32.to_le_bytes(), 63i32.to_le_bytes()].concat();
    let at = bytes.windows(8).rposition(|w| w == domain).unwrap() + 4;
    bytes[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
    std::fs::write(&meta, bytes).unwrap();
    let view = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20).unwrap();
    let name = fragment_name(&frag);
    let started = std::time::Instant::now();
    for file in [
        "x/values.bin",
        "x/values.txt",
        "i32/values.npy",
        "cells.csv",
    ] {
        let node = view.resolve(&format!("fragments/{name}/{file}")).unwrap();
        let err = view.size(node).unwrap_err().to_string();
        assert_names(&err, &[name, "__fragment_metadata.tdb", "tile offsets"]);
    }
    assert!(
        started.elapsed().as_secs() < 5,
        "sizing took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_missing_fragment_metadata_file_is_eio_naming_it() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    std::fs::remove_file(frag.join("__fragment_metadata.tdb")).unwrap();
    let view = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20).unwrap();
    let name = fragment_name(&frag);
    let folder = view.resolve(&format!("fragments/{name}")).unwrap();
    let err = view.list(folder).unwrap_err();
    // The fragment is listed (committed): its lost metadata is bad data, not ENOENT.
    assert_eq!(err.errno(), libc::EIO, "{err}");
    assert_names(
        &err.to_string(),
        &[name, "__fragment_metadata.tdb", "No such file"],
    );
}

#[test]
fn a_lost_coords_file_of_a_v1_sparse_fragment_is_named_not_taken_for_dense() {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("v1_sparse_split_gzip");
    copy_dir(&handbuilt().join("v1_sparse_split_gzip"), &array);
    let name = "__0123456789abcdef0123456789abcdef_1541540586869";
    std::fs::remove_file(array.join(name).join("__coords.tdb")).unwrap();
    // Formats 1-2 have no dense flag: a sparse array's fragment stays sparse without it.
    let err = read_field(&array, &array.join(name), "x", "values.bin")
        .unwrap_err()
        .to_string();
    assert_names(&err, &[name, "__coords.tdb", "tile 0", "No such file"]);
}

#[test]
fn offsets_out_of_order_name_the_offsets_file_and_tile() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    // big_zstd's offsets (a7.tdb, no filters): the offset of cell 1 made huge.
    let path = frag.join("a7.tdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = first_chunk_data(&bytes) + 8;
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let name = fragment_name(&frag);
    let view = ArrayTree::open_path(&array, OpenOptions::default(), 1 << 20).unwrap();
    for file in ["big_zstd/values.txt", "cells.csv"] {
        let node = view.resolve(&format!("fragments/{name}/{file}")).unwrap();
        let err = read_all(&view, node).unwrap_err().to_string();
        assert_names(&err, &[name, "a7.tdb", "tile 0", "out of order"]);
    }
}

#[test]
fn a_tile_past_the_end_of_its_file_is_refused_before_its_chunk_count_is_trusted() {
    let (_t, array, frag) = copy_fixture("dense_basic");
    // a0.tdb: 4 tiles of 84 bytes. The footer's size of a0.tdb made huge (the last tile
    // then claims exabytes), and the last tile's chunk count 2^40 (which "fits" them):
    // reserving for those chunks would need 26 TB.
    let meta = frag.join("__fragment_metadata.tdb");
    let mut bytes = std::fs::read(&meta).unwrap();
    // Every 336 of the footer (f32's a6.tdb has the same size).
    let n = bytes.len();
    let footer_len = u64::from_le_bytes(bytes[n - 8..].try_into().unwrap()) as usize;
    let footer = &mut bytes[n - 8 - footer_len..n - 8];
    let sizes: Vec<usize> = (0..footer.len() - 8)
        .filter(|&i| footer[i..i + 8] == 336u64.to_le_bytes())
        .collect();
    assert!(!sizes.is_empty());
    for i in sizes {
        footer[i..i + 8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    }
    std::fs::write(&meta, bytes).unwrap();
    let path = frag.join("a0.tdb");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[252..260].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let err = read_field(&array, &frag, "i32", "values.bin")
        .unwrap_err()
        .to_string();
    assert_names(
        &err,
        &[fragment_name(&frag), "a0.tdb", "tile 3", "truncated"],
    );
}
