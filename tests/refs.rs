//! `fragfs refs` (`view/tiledb/zarr/refs.rs`): kerchunk reference sets of a state's Zarr
//! v2 store, decoded here as a reader would (the `fragfs_tile` codec, zstd, zlib,
//! shuffle, base64 inline) and compared byte for byte with the tree's own `zarr/`
//! chunks: a one-fragment state referenced whole, standard codecs where the tiles allow,
//! column-major and multi-chunk tiles, merges inlined, served or refused with reasons,
//! encrypted arrays never referenced, and the command's output and exit status.
//! (zarr-python, xarray and TileDB-Py read them in python/tests/test_refs.py.)

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use fragfs::array::OpenOptions;
use fragfs::read::tile_codec::TileCodec;
use fragfs::storage::s3::S3Options;
use fragfs::view::tiledb::{RefOptions, Refs, RefsSummary, ENVELOPE};
use fragfs::view::{open_array, FileTree};
use serde_json::Value;

fn refs_fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/refs").join(name)
}

fn make(array: &Path, at: Option<u64>, options: &RefOptions, key: OpenOptions) -> Refs {
    let tree = open_array(array, &S3Options::default(), key, 64 << 20).unwrap();
    tree.refs(at, options).unwrap()
}

/// A reference set that was made, parsed, with its summary.
fn made(array: &Path, at: Option<u64>, options: &RefOptions) -> (Value, RefsSummary) {
    match make(array, at, options, OpenOptions::default()) {
        Refs::Made { json, summary } => (serde_json::from_slice(&json).unwrap(), summary),
        Refs::Refused(chunks) => panic!("{}: refused {chunks:?}", array.display()),
    }
}

/// The `.zarray` of array `name` in a reference set.
fn zarray(refs: &Value, name: &str) -> Value {
    let text = refs["refs"][format!("{name}/.zarray")].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

/// The bytes a reference points at, as fsspec's reference filesystem reads them.
fn referenced(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => {
            let b64 = s.strip_prefix("base64:").expect("chunks are base64");
            fragfs::wire::auth::base64_decode(b64.as_bytes()).unwrap()
        }
        Value::Array(parts) => {
            let path = parts[0].as_str().unwrap();
            assert!(
                path.starts_with('/'),
                "a local file by its absolute path: {path}"
            );
            let bytes = std::fs::read(path).unwrap();
            let offset = parts[1].as_u64().unwrap() as usize;
            let len = parts[2].as_u64().unwrap() as usize;
            bytes[offset..offset + len].to_vec()
        }
        other => panic!("not a chunk reference: {other}"),
    }
}

/// Chunk `key` of array `name`, decoded through the codecs its `.zarray` names.
fn decode(refs: &Value, name: &str, key: &str) -> Vec<u8> {
    let z = zarray(refs, name);
    let bytes = referenced(&refs["refs"][format!("{name}/{key}")]);
    let unpacked = match z["compressor"]["id"].as_str() {
        None => bytes,
        Some("zstd") => zstd::stream::decode_all(&bytes[..]).unwrap(),
        Some("zlib") => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[..])
                .read_to_end(&mut out)
                .unwrap();
            out
        }
        Some("fragfs_tile") => TileCodec::from_json(&z["compressor"])
            .unwrap()
            .decode(&bytes)
            .unwrap(),
        Some(other) => panic!("{name}: compressor {other}"),
    };
    match z["filters"].as_array().map(|f| &f[..]) {
        None => unpacked,
        Some([f]) if f["id"] == "shuffle" => {
            let size = f["elementsize"].as_u64().unwrap() as usize;
            let n = unpacked.len() / size;
            let mut out = vec![0u8; unpacked.len()];
            for i in 0..n {
                for j in 0..size {
                    out[i * size + j] = unpacked[j * n + i];
                }
            }
            out
        }
        // Variable-length elements: the chunk file's own encoding, compared as it is.
        Some([f]) if f["id"] == "vlen-utf8" || f["id"] == "vlen-bytes" => unpacked,
        Some(other) => panic!("{name}: filters {other:?}"),
    }
}

/// Every chunk of the set decodes to the bytes of the tree's own chunk file (the
/// fixtures' domains are whole tiles: no chunk runs past them). Returns the chunks.
fn check_chunks(array: &Path, at: Option<u64>, refs: &Value) -> usize {
    let tree = open_array(
        array,
        &S3Options::default(),
        OpenOptions::default(),
        64 << 20,
    )
    .unwrap();
    let dir = match at {
        None => "zarr".to_string(),
        Some(t) => format!("at/{t}/zarr"),
    };
    let mut n = 0;
    for (key, value) in refs["refs"].as_object().unwrap() {
        let Some((name, chunk)) = key.split_once('/') else {
            continue;
        };
        if chunk.starts_with('.') || value.as_array().is_some_and(|a| a.len() == 1) {
            continue;
        }
        let want = read_all(&tree, tree.resolve(&format!("{dir}/{key}")).unwrap()).unwrap();
        assert_eq!(
            decode(refs, name, chunk),
            want,
            "{}: {key}",
            array.display()
        );
        n += 1;
    }
    n
}

fn compressor(refs: &Value, name: &str) -> String {
    let z = zarray(refs, name);
    let id = z["compressor"]["id"].as_str().unwrap_or("null").to_string();
    match z["filters"][0]["id"].as_str() {
        Some(f) => format!("{f}+{id}"),
        None => id,
    }
}

/// One fragment wrote the whole domain at t=1: every chunk is its stored tile, each
/// array under the standard codecs its pipeline has; only coordinates are inline.
#[test]
fn a_one_fragment_state_is_referenced_whole_under_standard_codecs() {
    let array = refs_fixture("refs_standard");
    let (refs, summary) = made(&array, Some(1), &RefOptions::default());
    assert_eq!(
        summary,
        RefsSummary {
            metadata: 2 + 2 * 9,
            referenced: 0,
            standard: 7 * 4,
            inlined: 2,
            served: 0,
        }
    );
    for (name, codecs) in [
        ("zstd_i32", "zstd"),
        ("zstd_rgb", "zstd"),
        ("gzip_f64", "zlib"),
        ("shuffle_zstd_i16", "shuffle+zstd"),
        ("raw_u8", "null"),
        ("n_f32", "zstd"),
        ("n_f32__validity", "zstd"),
        ("r", "null"),
    ] {
        assert_eq!(compressor(&refs, name), codecs, "{name}");
    }
    assert_eq!(
        zarray(&refs, "shuffle_zstd_i16")["filters"][0]["elementsize"],
        2
    );
    assert_eq!(check_chunks(&array, Some(1), &refs), 7 * 4 + 2);
    // The same set every time.
    let again = match make(
        &array,
        Some(1),
        &RefOptions::default(),
        OpenOptions::default(),
    ) {
        Refs::Made { json, .. } => json,
        Refs::Refused(c) => panic!("{c:?}"),
    };
    assert_eq!(serde_json::from_slice::<Value>(&again).unwrap(), refs);
}

/// Two fragments that each write whole tiles (`dense_2d`): every chunk is one of their
/// stored tiles, the newest's where both wrote; pipelines numcodecs lacks under
/// `fragfs_tile`.
#[test]
fn tiles_of_several_fragments_and_pipelines_are_referenced() {
    let array = fixtures().join("dense_2d");
    let (refs, summary) = made(&array, None, &RefOptions::default());
    assert_eq!((summary.referenced, summary.standard), (5 * 8, 8));
    assert_eq!(summary.inlined, 2, "the coordinates only");
    assert_eq!(compressor(&refs, "bs_dd_zstd"), "fragfs_tile");
    let codec = &zarray(&refs, "bs_dd_zstd")["compressor"];
    assert_eq!(
        codec["filters"],
        serde_json::json!(["BYTESHUFFLE", "DOUBLE_DELTA", "ZSTD"])
    );
    assert_eq!(compressor(&refs, "plain"), "null");
    assert_eq!(check_chunks(&array, None, &refs), 6 * 8 + 2);
    // The second fragment's tiles where it wrote whole tiles.
    let newest = refs["refs"]["md5_i16/1.2"][0].as_str().unwrap();
    let oldest = refs["refs"]["md5_i16/0.0"][0].as_str().unwrap();
    assert_ne!(newest, oldest);
}

#[test]
fn column_major_and_multi_chunk_tiles_decode_row_major() {
    let array = refs_fixture("refs_colmajor");
    let (refs, summary) = made(&array, Some(1), &RefOptions::default());
    assert_eq!((summary.referenced, summary.inlined), (2 * 4, 2));
    assert_eq!(
        zarray(&refs, "raw_i64")["compressor"]["cell_order"],
        "col-major"
    );
    check_chunks(&array, Some(1), &refs);
    // t=2 rewrote rows 4-5: chunks 1.* are merges, inline behind the envelope.
    let (refs, summary) = made(&array, None, &RefOptions::default());
    assert_eq!((summary.referenced, summary.inlined), (2 * 2, 2 * 2 + 2));
    let inline = referenced(&refs["refs"]["zstd_i32/1.0"]);
    assert_eq!(inline[..8], ENVELOPE);
    check_chunks(&array, None, &refs);

    // A tile of three filter chunks (160,000 bytes): fragfs_tile, never standard.
    let big = refs_fixture("refs_big_tile");
    let options = RefOptions {
        inline_limit: 1 << 20,
        ..RefOptions::default()
    };
    let (refs, summary) = made(&big, None, &options);
    assert_eq!(
        (summary.referenced, summary.standard, summary.inlined),
        (1, 0, 2)
    );
    assert_eq!(compressor(&refs, "v"), "fragfs_tile");
    assert_eq!(check_chunks(&big, None, &refs), 3);
}

/// A merged chunk over the inline limit with no server: no set, every such chunk
/// named with why; with a server, its URL (behind the envelope where the array is
/// `fragfs_tile`, which an array with served chunks always is unless none is
/// referenced).
#[test]
fn merges_are_inlined_served_or_refused_with_reasons() {
    let array = refs_fixture("refs_standard");
    let (refs, summary) = made(&array, None, &RefOptions::default());
    assert_eq!((summary.standard, summary.inlined), (7 * 3, 7 + 2));
    // Inline chunks go through the array's standard codecs like the others.
    assert_eq!(compressor(&refs, "zstd_i32"), "zstd");
    check_chunks(&array, None, &refs);

    let none = RefOptions {
        inline_limit: 0,
        serve_url: None,
    };
    let Refs::Refused(chunks) = make(&array, None, &none, OpenOptions::default()) else {
        panic!("made a set that leaves chunks out");
    };
    assert_eq!(chunks.len(), 7, "{chunks:?}");
    let (chunk, why) = &chunks[0];
    assert_eq!(chunk, "zarr/zstd_i32/0.0");
    assert!(why.starts_with("cells of 2 fragments: __1_1_"), "{why}");
    assert!(
        why.ends_with("48 bytes, more than --inline-limit 0, and no --serve-url"),
        "{why}"
    );

    let served = RefOptions {
        inline_limit: 0,
        serve_url: Some("http://127.0.0.1:9/".into()),
    };
    let (refs, summary) = made(&array, None, &served);
    assert_eq!(
        (summary.referenced, summary.served, summary.inlined),
        (7 * 3, 7, 2)
    );
    assert_eq!(compressor(&refs, "zstd_i32"), "fragfs_tile");
    assert_eq!(
        refs["refs"]["n_f32__validity/0.0"],
        serde_json::json!(["http://127.0.0.1:9/zarr/n_f32__validity/0.0?envelope=fragfs_tile"])
    );
    let (refs, _) = made(&array, Some(2), &served);
    assert_eq!(
        refs["refs"]["raw_u8/0.0"][0],
        "http://127.0.0.1:9/at/2/zarr/raw_u8/0.0?envelope=fragfs_tile"
    );

    // Overlapping partial writes: nothing referenced, the store's own codecs, served
    // as the zarr/ files are; coordinates stay inline.
    let overlap = features().join("merge_dense_overlap");
    let (refs, summary) = made(&overlap, None, &served);
    assert_eq!(
        (summary.referenced, summary.standard, summary.inlined),
        (0, 0, 2)
    );
    assert_eq!(compressor(&refs, "i32"), "null");
    assert_eq!(
        refs["refs"]["i32/0.0"][0],
        "http://127.0.0.1:9/zarr/i32/0.0"
    );
    assert_eq!(zarray(&refs, "s")["filters"][0]["id"], "vlen-utf8");
    assert_eq!(refs["refs"]["s/0.0"][0], "http://127.0.0.1:9/zarr/s/0.0");
    let (refs, summary) = made(&overlap, None, &RefOptions::default());
    assert_eq!(summary.served, 0);
    check_chunks(&overlap, None, &refs);
}

/// Encrypted fragments' tiles need the key, which no reference carries: every chunk
/// is a merge, given decrypted inline, and the set names no key.
#[test]
fn encrypted_tiles_are_never_referenced() {
    let array = fixtures().join("encrypted");
    let key = OpenOptions {
        key: Some(fragfs::array::parse_key("0123456789abcdeF0123456789abcdeF").unwrap()),
    };
    let Refs::Made { json, summary } = make(&array, None, &RefOptions::default(), key.clone())
    else {
        panic!("refused");
    };
    assert_eq!((summary.referenced, summary.standard), (0, 0));
    assert!(summary.inlined > 4);
    let text = String::from_utf8(json).unwrap();
    assert!(!text.contains("0123456789abcdeF"));
    let refused = make(
        &array,
        None,
        &RefOptions {
            inline_limit: 0,
            serve_url: None,
        },
        key,
    );
    let Refs::Refused(chunks) = refused else {
        panic!("made");
    };
    assert!(
        chunks
            .iter()
            .any(|(_, why)| why.contains("is encrypted: its tiles need the key")),
        "{chunks:?}"
    );
}

#[test]
fn the_command_writes_the_set_or_names_what_it_cannot_reference() {
    let bin = env!("CARGO_BIN_EXE_fragfs");
    let array = refs_fixture("refs_standard");
    let dir = scratch_dir();
    let file = dir.path().join("refs.json");
    let out = Command::new(bin)
        .args(["refs", "--at", "1", "-o"])
        .arg(&file)
        .arg(&array)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0 chunks referenced (fragfs_tile), 28 referenced (standard codecs), 2 inlined, 0 served"),
        "{stderr}"
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(written, made(&array, Some(1), &RefOptions::default()).0);
    // Stdout by default.
    let out = Command::new(bin)
        .args(["refs"])
        .arg(&array)
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["version"], 1);
    // Refused: nothing written, each chunk and why on stderr, a failure.
    let out = Command::new(bin)
        .args(["refs", "--inline-limit", "0", "-o"])
        .arg(dir.path().join("none.json"))
        .arg(&array)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!dir.path().join("none.json").exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("fragfs refs: zarr/").count(), 7, "{stderr}");
    assert!(stderr.contains("7 chunks can be neither referenced, inlined nor served"));
    // What is not one array.
    let out = Command::new(bin)
        .args(["refs"])
        .arg(features().join("group_nested"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a TileDB group"));
    let out = Command::new(bin)
        .args(["refs"])
        .arg(fixtures().join("sparse_var_nullable"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sparse"),
        "{out:?}"
    );
}
