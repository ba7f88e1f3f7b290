//! Results larger than the cache are kept on disk (the spill, `read::spill`) and read
//! back by range: a chunk larger than the engine cache is decoded once, a rendered file
//! larger than the view cache is rendered once, however many small reads they take;
//! what a rescan makes stale leaves the spill.

mod common;

use std::sync::Arc;

use common::mounting::{fuse_available, InProcess};
use common::*;
use fragfs::view::{ArrayTree, FileTree};

/// Reads `path` of `tree` whole in reads of `step` bytes.
fn read_in_steps(tree: &ArrayTree, path: &str, step: u64) -> Vec<u8> {
    let node = tree.resolve(path).unwrap();
    let size = tree.size(node).unwrap();
    let mut out = Vec::new();
    let mut reads = 0;
    while (out.len() as u64) < size {
        let part = tree.read_at(node, out.len() as u64, step).unwrap();
        assert!(!part.is_empty(), "{path}: short at {}", out.len());
        out.extend(part);
        reads += 1;
    }
    assert!(reads > 4, "{path}: {reads} reads prove nothing");
    out
}

/// `dense_basic` with caches of `cache` bytes, and its first fragment's folder.
fn dense_basic(cache: u64) -> (ArrayTree, String) {
    let (array, expected) = fixture("dense_basic");
    let tree = ArrayTree::open_path(&array, options_for(&expected), cache).unwrap();
    (tree, format!("fragments/{}", first_fragment(&expected)))
}

/// Bytes of the largest chunk of `field`'s tiles, at least (the tile's decoded size over
/// its chunk count), from `tiles.json`.
fn largest_chunk_at_least(tree: &ArrayTree, fragment: &str, field: &str, file: &str) -> u64 {
    let node = tree.resolve(&format!("{fragment}/tiles.json")).unwrap();
    let tiles: serde_json::Value = serde_json::from_slice(&read_all(tree, node).unwrap()).unwrap();
    tiles["fields"][field]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[file]["decoded_size"].as_u64().unwrap() / t[file]["chunks"].as_u64().unwrap())
        .max()
        .unwrap()
}

/// `big_zstd` (zstd, var) has a tile of two chunks of 32 and 64 KiB: with a 32 KiB cache
/// both are larger than the engine's share. Read 4 KiB at a time, each chunk used to be
/// decoded again by every read that cut it; now each is decoded once, as in one whole
/// read with a big cache.
#[test]
fn small_reads_of_chunks_larger_than_the_cache_decode_each_once() {
    const CACHE: u64 = 32 << 10;
    let (big, fragment) = dense_basic(64 << 20);
    let path = format!("{fragment}/big_zstd/values.bin");
    assert!(
        largest_chunk_at_least(&big, &fragment, "big_zstd", "a7_var.tdb") > CACHE,
        "the fixture no longer has a chunk larger than the cache"
    );
    let before = big.chunks_decoded();
    let node = big.resolve(&path).unwrap();
    let whole = big.read_at(node, 0, big.size(node).unwrap()).unwrap();
    let chunks = big.chunks_decoded() - before;
    assert!(chunks >= 2);

    let (small, _) = dense_basic(CACHE);
    let before = small.chunks_decoded();
    let bytes = read_in_steps(&small, &path, 4096);
    assert!(bytes == whole, "bytes differ from a read with a big cache");
    assert_eq!(
        small.chunks_decoded() - before,
        chunks,
        "each chunk decoded once"
    );
    assert!(small.spill_used() > 0, "the large chunks are kept on disk");
    assert!(small.cache_used() <= CACHE, "memory stays within the cache");
    // Ranges read back in another order (backwards, across chunk ends) are the same.
    let size = bytes.len() as u64;
    let node = node_of(&small, &path);
    let mut offset = size;
    while offset > size.saturating_sub(70_000) {
        offset = offset.saturating_sub(3000);
        let part = small.read_at(node, offset, 3000).unwrap();
        assert!(part == bytes[offset as usize..offset as usize + part.len()]);
    }
}

fn node_of(tree: &ArrayTree, path: &str) -> u64 {
    tree.resolve(path).unwrap()
}

/// A chunk stored as it decodes (no filter) and larger than the cache is read by range
/// from its file: nothing is decoded (it used to be read whole by every read that cut it)
/// and nothing is spilled.
#[test]
fn plain_chunks_larger_than_the_cache_are_read_by_range() {
    const CACHE: u64 = 32 << 10;
    let array = repo().join("tests/fixtures/zarr/zarr_big_chunk");
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo().join("tests/fixtures/zarr/zarr_big_chunk.expected.json")).unwrap(),
    )
    .unwrap();
    let fragment = format!("fragments/{}", first_fragment(&expected));
    let big = ArrayTree::open_path(&array, options_for(&expected), 64 << 20).unwrap();
    assert!(largest_chunk_at_least(&big, &fragment, "s", "a0.tdb") > CACHE);
    let path = format!("{fragment}/s/offsets.bin");
    let whole = read_all(&big, node_of(&big, &path)).unwrap();

    let small = ArrayTree::open_path(&array, options_for(&expected), CACHE).unwrap();
    let before = small.chunks_decoded();
    assert!(read_in_steps(&small, &path, 4096) == whole);
    assert_eq!(
        small.chunks_decoded(),
        before,
        "plain chunks: nothing decoded"
    );
    assert_eq!(small.spill_used(), 0, "and nothing copied to disk");
}

/// `tiles.json` of `dense_basic`'s first fragment (1.6 MB: its big strings' min and max)
/// is larger than the view cache's share of 4 MiB, `footer.json` (4.7 KB) than that of
/// 32 KiB. Read in small pieces, each was rendered whole by every read; now once, and
/// `stat` renders nothing more.
#[test]
fn rendered_files_larger_than_the_view_cache_are_rendered_once() {
    for (file, cache, step) in [
        ("tiles.json", 4u64 << 20, 64u64 << 10),
        ("footer.json", 32 << 10, 512),
    ] {
        let (big, fragment) = dense_basic(64 << 20);
        let path = format!("{fragment}/{file}");
        let whole = read_all(&big, node_of(&big, &path)).unwrap();
        assert!(
            whole.len() as u64 > cache / 8,
            "{file}: {} bytes fit the view cache of {cache}",
            whole.len()
        );

        let (small, _) = dense_basic(cache);
        let node = node_of(&small, &path);
        let before = small.files_rendered();
        assert!(
            read_in_steps(&small, &path, step) == whole,
            "{file}: bytes differ"
        );
        assert_eq!(small.stat(node).unwrap().size, whole.len() as u64);
        assert_eq!(small.files_rendered() - before, 1, "{file}: rendered once");
        assert!(small.spill_used() >= whole.len() as u64);
    }
}

/// A rescan that finds a fragment gone drops what the spill kept of it (its rendered
/// `tiles.json`), and keeps what a live fragment still shows.
#[test]
fn a_rescan_drops_what_the_spill_kept_of_a_vanished_fragment() {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("array");
    many_fragments(&array, 2, 1);
    // Each fragment's tiles.json (6 KB) is larger than the view cache (4 KiB).
    let tree = ArrayTree::open_path(&array, Default::default(), 32 << 10)
        .unwrap()
        .with_refresh_interval(std::time::Duration::MAX);
    let names: Vec<String> = tree
        .list(tree.resolve("fragments").unwrap())
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names.len(), 2);
    let mut sizes = Vec::new();
    for name in &names {
        let node = node_of(&tree, &format!("fragments/{name}/tiles.json"));
        sizes.push(read_all(&tree, node).unwrap().len() as u64);
        assert!(
            sizes.last().unwrap() * 8 > 32 << 10,
            "tiles.json fits the view cache"
        );
    }
    assert_eq!(tree.spill_used(), sizes[0] + sizes[1], "both kept on disk");

    std::fs::remove_file(array.join(format!("__commits/{}.wrt", names[0]))).unwrap();
    std::fs::remove_dir_all(array.join(format!("__fragments/{}", names[0]))).unwrap();
    assert!(tree.refresh().unwrap(), "the rescan saw the fragment go");
    assert_eq!(
        tree.spill_used(),
        sizes[1],
        "the vanished fragment's file went"
    );
}

/// Through a mount (the kernel's own read sizes, which cut the chunks): a chunk larger
/// than the cache is decoded once, and the bytes are those of a read with a big cache.
/// One serving thread, so requests are served in the order the kernel sends them (two
/// could serve a later range first, and a 32 KiB spill keeps one such chunk at a time).
#[test]
fn through_a_mount_large_chunks_are_decoded_once() {
    if !fuse_available("through_a_mount_large_chunks_are_decoded_once") {
        return;
    }
    const CACHE: u64 = 32 << 10;
    let (array, expected) = fixture("dense_basic");
    let (big, fragment) = dense_basic(64 << 20);
    let path = format!("{fragment}/big_zstd/values.bin");
    let before = big.chunks_decoded();
    let node = node_of(&big, &path);
    let whole = big.read_at(node, 0, big.size(node).unwrap()).unwrap();
    let chunks = big.chunks_decoded() - before;

    let mount = InProcess::new(&array, &expected, CACHE, 1);
    let view: Arc<ArrayTree> = mount.view.clone();
    let before = view.chunks_decoded();
    let file = std::fs::File::open(mount.path().join(&path)).unwrap();
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        use std::os::unix::fs::FileExt;
        let n = file.read_at(&mut buf, bytes.len() as u64).unwrap();
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
    }
    assert!(bytes == whole, "bytes through the mount differ");
    assert_eq!(
        view.chunks_decoded() - before,
        chunks,
        "each chunk decoded once"
    );
}
