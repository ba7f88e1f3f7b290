//! Laziness: opening and listing read no fragment metadata and decode no tile; a read
//! decodes only the chunks that overlap it.

mod common;

use common::*;
use fragfs::storage::memory::Access;
use fragfs::storage::MemoryStore;
use fragfs::view::{ArrayTree, FileTree, Ino};

/// The `dense_basic` fixture (4 tiles of 16 cells, one chunk each, per field) and the
/// folder name of its first fragment.
fn dense_basic() -> (ArrayTree, String) {
    let (array, expected) = fixture("dense_basic");
    let view = open_view(&array, &expected).unwrap();
    let dir = expected["fragments"][0]["fragment_dir"].as_str().unwrap();
    let frag = dir.rsplit('/').next().unwrap().to_string();
    (view, frag)
}

fn values_bin(view: &ArrayTree, frag: &str, field: &str) -> Ino {
    view.resolve(&format!("fragments/{frag}/{field}/values.bin"))
        .unwrap()
}

#[test]
fn opening_and_listing_fragments_parse_no_fragment_metadata() {
    let (array, expected) = fixture("consolidated");
    let view = open_view(&array, &expected).unwrap();
    let fragments = view.list(view.resolve("fragments").unwrap()).unwrap();
    assert!(fragments.len() >= 2);
    for f in &fragments {
        view.stat(f.ino).unwrap();
    }
    assert!(view.array().fragments.iter().all(|f| !f.meta_loaded()));
    // Looking inside one fragment parses that one only.
    view.list(fragments[0].ino).unwrap();
    let loaded: Vec<bool> = view
        .array()
        .fragments
        .iter()
        .map(|f| f.meta_loaded())
        .collect();
    assert!(loaded[0] && loaded[1..].iter().all(|l| !l), "{loaded:?}");
    assert_eq!(view.chunks_decoded(), 0);
}

#[test]
fn a_small_read_decodes_only_the_chunk_it_touches() {
    let (view, frag) = dense_basic();
    // i32: 4 tiles of 16 cells, one chunk each; f64_zstd: the same tiles, compressed.
    for field in ["i32", "f64_zstd"] {
        let before = view.chunks_decoded();
        let node = values_bin(&view, &frag, field);
        let size = view.size(node).unwrap();
        assert_eq!(view.chunks_decoded(), before, "size() decoded a chunk");
        let tile = size / 4;
        let one = view.read_at(node, tile + 3, 2).unwrap();
        assert_eq!(one.len(), 2);
        assert_eq!(
            view.chunks_decoded() - before,
            1,
            "{field}: one chunk for 2 bytes"
        );
        // The same bytes again come from the cache.
        assert_eq!(view.read_at(node, tile + 3, 2).unwrap(), one);
        assert_eq!(view.chunks_decoded() - before, 1, "{field}: cached");
        // A read across a tile boundary needs exactly the two tiles' chunks.
        view.read_at(node, 3 * tile - 1, 2).unwrap();
        assert_eq!(
            view.chunks_decoded() - before,
            3,
            "{field}: two more chunks"
        );
        // And the bytes are those of a whole-file read.
        let all = read_all(&view, node).unwrap();
        assert_eq!(&all[(tile + 3) as usize..(tile + 5) as usize], &one[..]);
    }
}

#[test]
fn reads_of_whole_chunks_decode_into_the_reply_and_leave_the_cache_alone() {
    let (view, frag) = dense_basic();
    for field in ["i32", "f64_zstd"] {
        let node = values_bin(&view, &frag, field);
        let size = view.size(node).unwrap();
        let (decoded, cached) = (view.chunks_decoded(), view.cache_used());
        // 4 tiles of one chunk each, read whole: straight into the output.
        let mut out = b"head".to_vec();
        view.read_into(node, 0, size, &mut out).unwrap();
        assert_eq!(&out[..4], b"head", "{field}: read_into appends");
        assert_eq!(out.len() as u64, 4 + size);
        assert_eq!(view.chunks_decoded() - decoded, 4, "{field}");
        // Only the chunk indexes (a few dozen bytes each) were cached, no chunk.
        let grown = view.cache_used() - cached;
        assert!(grown < 4 * 512, "{field}: cache grew by {grown} bytes");
        assert_eq!(view.read_at(node, 0, size).unwrap(), &out[4..]);
        // A read cutting a chunk caches it, for the neighbouring read.
        let tile = size / 4;
        let before = view.chunks_decoded();
        view.read_at(node, tile + 1, 3).unwrap();
        view.read_at(node, tile + 4, 3).unwrap();
        assert_eq!(
            view.chunks_decoded() - before,
            1,
            "{field}: cut chunk cached"
        );
        assert!(
            view.cache_used() - cached >= tile,
            "{field}: the chunk is cached"
        );
    }
}

/// A forward scan in reads that cut chunks (`fragfs serve` ranges, a reader's own
/// buffer size): each chunk is decoded once, kept only until the read that finishes it,
/// and the cache ends the scan as it started: a one-pass reader does not fill it.
#[test]
fn a_forward_scan_that_cuts_chunks_decodes_each_once_and_leaves_the_cache_as_it_was() {
    let (view, frag) = dense_basic();
    for field in ["i32", "f64_zstd"] {
        let node = values_bin(&view, &frag, field);
        let size = view.size(node).unwrap();
        let whole = view.read_at(node, 0, size).unwrap(); // walks the chunk indexes
        let (decoded, cached) = (view.chunks_decoded(), view.cache_used());
        // 4 tiles of one chunk each, read in steps of 3/4 of a chunk: every read
        // after the first cuts one chunk at its start and one at its end.
        let step = size / 4 * 3 / 4;
        let mut scanned = Vec::new();
        while (scanned.len() as u64) < size {
            scanned.extend(view.read_at(node, scanned.len() as u64, step).unwrap());
        }
        assert_eq!(scanned, whole, "{field}");
        assert_eq!(view.chunks_decoded() - decoded, 4, "{field}: once each");
        assert_eq!(view.cache_used(), cached, "{field}: no chunk kept");
    }
}

/// A dense state's rows cross tiles: read in bands of rows (as a reader of
/// `latest/array.nc` or `values.bin` does, a request at a time), each band takes from
/// every tile of its rows a block of cells that follow each other in the fragment.
/// Every chunk is decoded once over the scan, as in one whole read, and none is left
/// in the cache.
#[test]
fn a_dense_state_read_in_bands_of_rows_decodes_each_chunk_once_and_keeps_none() {
    let (array, expected) = fixture("dense_2d");
    // 8 x 12 cells, tiles of 4 x 3 (4 tiles per row), f32 in chunks of 4 cells: a
    // band of 2 rows cuts chunks inside every tile.
    let whole_view = open_view(&array, &expected).unwrap();
    let node = whole_view
        .resolve("latest/f32_delta_zstd/values.bin")
        .unwrap();
    let size = whole_view.size(node).unwrap();
    assert_eq!(size, 8 * 12 * 4);
    let whole = whole_view.read_at(node, 0, size).unwrap();
    let once = whole_view.chunks_decoded();
    assert!(once > 0);

    let view = open_view(&array, &expected).unwrap();
    let node = view.resolve("latest/f32_delta_zstd/values.bin").unwrap();
    let band = 2 * 12 * 4;
    // A first scan walks the chunk indexes; the second shows what a scan keeps.
    for scan in 0..2 {
        let (decoded, cached) = (view.chunks_decoded(), view.cache_used());
        let mut scanned = Vec::new();
        for at in (0..size).step_by(band) {
            scanned.extend(view.read_at(node, at, band as u64).unwrap());
        }
        assert_eq!(scanned, whole, "scan {scan}");
        assert_eq!(
            view.chunks_decoded() - decoded,
            once,
            "scan {scan}: once each"
        );
        if scan == 1 {
            assert_eq!(view.cache_used(), cached, "a scan leaves no chunk cached");
        }
    }
}

/// `tiles.json` walks the chunk headers of every tile. A tile larger than the store's
/// walk window is brought in whole first on a local disk, where each window would
/// otherwise be a random read of its own; on object storage it is not, where bringing
/// it in is a GET of the whole tile.
#[test]
fn a_walk_of_chunk_headers_brings_a_large_tile_in_at_once_on_a_local_disk_only() {
    let (array, expected) = fixture("dense_2d");
    let frag = expected["fragments"][0]["fragment_dir"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    for remote in [false, true] {
        // A walk window of 20 bytes: every tile (68 bytes or more) is larger.
        let mut store = MemoryStore::from_dir(&array).unwrap().with_walk_window(20);
        if remote {
            store = store.as_remote();
        }
        let store = std::sync::Arc::new(store);
        let view = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20).unwrap();
        store.keep_journal();
        let node = view
            .resolve(&format!("fragments/{frag}/tiles.json"))
            .unwrap();
        let json = view.read_at(node, 0, 1 << 30).unwrap();
        assert!(String::from_utf8_lossy(&json).contains("\"tile_count\": 8"));
        let ahead = store
            .journal_entries()
            .into_iter()
            .filter(|a| matches!(a, Access::ReadAhead { .. }))
            .count();
        if remote {
            assert_eq!(ahead, 0, "object storage: headers only");
        } else {
            assert!(ahead > 0, "a local disk: tiles brought in whole");
        }
        assert_eq!(view.chunks_decoded(), 0, "nothing decoded");
    }
}

#[test]
fn read_ahead_walks_the_coming_chunk_headers_and_decodes_nothing() {
    let (view, frag) = dense_basic();
    let node = values_bin(&view, &frag, "f64_zstd");
    let size = view.size(node).unwrap();
    let cached = view.cache_used();
    view.read_ahead(node, 0, size).unwrap();
    assert_eq!(view.chunks_decoded(), 0, "read-ahead decodes no chunk");
    assert!(
        view.cache_used() > cached,
        "the tiles' chunk indexes are cached"
    );
    // Past the end, or on files with nothing stored, it is a no-op.
    view.read_ahead(node, size, 100).unwrap();
    let json = view.resolve("array.json").unwrap();
    view.read_ahead(json, 0, 100).unwrap();
    assert_eq!(view.chunks_decoded(), 0);
}

#[test]
fn read_ahead_to_the_end_of_a_file_prepares_the_same_file_of_the_next_fragment() {
    // `cat fragments/*/f64_zstd/values.bin` reads the fragments' files one after the
    // other: when read-ahead reaches the end of one, the next one's start is prepared
    // (its metadata read, its chunk headers walked; nothing decoded).
    let (view, frag) = dense_basic();
    let fragments = view.array().fragments.clone();
    assert_eq!(fragments.len(), 2);
    assert_eq!(fragments[0].name, frag);
    let node = values_bin(&view, &frag, "f64_zstd");
    let size = view.size(node).unwrap();
    assert!(fragments[0].meta_loaded() && !fragments[1].meta_loaded());
    // Short of the end: this fragment only.
    view.read_ahead(node, 0, size - 1).unwrap();
    assert!(!fragments[1].meta_loaded(), "read-ahead short of the end");
    let cached = view.cache_used();
    // To the end: the next fragment's file too.
    view.read_ahead(node, size / 2, size - size / 2).unwrap();
    assert!(fragments[1].meta_loaded(), "the next fragment is prepared");
    assert!(view.cache_used() > cached, "its chunk indexes are cached");
    assert_eq!(view.chunks_decoded(), 0, "read-ahead decodes no chunk");
    // Its last fragment's file has no next one; a remote store never prepares one (it
    // would read metadata before its first use).
    let last = values_bin(&view, &fragments[1].name, "f64_zstd");
    view.read_ahead(last, 0, view.size(last).unwrap()).unwrap();
    let (array, expected) = fixture("dense_basic");
    let store = std::sync::Arc::new(MemoryStore::from_dir(&array).unwrap().as_remote());
    let remote = ArrayTree::open(store, options_for(&expected), 64 << 20).unwrap();
    let node = values_bin(&remote, &frag, "f64_zstd");
    remote.read_ahead(node, 0, size).unwrap();
    assert!(
        !remote.array().fragments[1].meta_loaded(),
        "remote: not prepared"
    );
}

#[test]
fn read_ahead_brings_in_and_walks_one_tile_after_the_other() {
    // Local store: each tile's chunk headers are walked right after its bytes are asked
    // for, so the reader finds each tile's index ready as soon as its bytes are, not once
    // the whole range has been read. Remote store (fetches in the background): the whole
    // range is asked for first, so every fetch is in flight during the walks.
    let (_, frag) = dense_basic();
    for remote in [false, true] {
        let tiles = read_ahead_order(&frag, remote);
        let want = if remote { 1 } else { 4 };
        assert_eq!(
            tiles, want,
            "remote {remote}: read-ahead hints before the walks"
        );
    }
}

/// Reads ahead the whole `f64_zstd` file of `frag` in `dense_basic` (4 tiles) and checks
/// that every read of the walk lies in the range of the last read-ahead hint before it;
/// returns how many hints there were.
fn read_ahead_order(frag: &str, remote: bool) -> usize {
    let (array, expected) = fixture("dense_basic");
    let store = MemoryStore::from_dir(&array).unwrap();
    let store = std::sync::Arc::new(if remote { store.as_remote() } else { store });
    let view = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20).unwrap();
    let fields = expected["fragments"][0]["fields"].as_array().unwrap();
    let field = fields.iter().find(|f| f["name"] == "f64_zstd").unwrap();
    let file = format!("{frag}/{}", field["files"]["data"].as_str().unwrap());
    let node = values_bin(&view, frag, "f64_zstd");
    let size = view.size(node).unwrap();
    store.keep_journal();
    view.read_ahead(node, 0, size).unwrap();
    let mut hints = Vec::new();
    for access in store.journal_entries() {
        match access {
            Access::ReadAhead { key, offset, len } if key.ends_with(&file) => {
                if let Some(&(_, end)) = hints.last() {
                    assert!(offset >= end, "tile at {offset} asked for before {end}");
                }
                hints.push((offset, offset + len));
            }
            Access::Read { key, offset, len } if key.ends_with(&file) => {
                let &(start, end) = hints.last().expect("a read before any read-ahead");
                assert!(
                    start <= offset && offset + len <= end,
                    "read {offset}+{len} outside the last range asked for ({start}..{end})"
                );
            }
            _ => {}
        }
    }
    hints.len()
}

#[test]
fn read_ahead_of_a_merged_file_prepares_the_tiles_of_its_source_fragments() {
    // `latest/<attr>/values.bin` and `latest/array.nc` draw their cells from the
    // fragments' tiles: read-ahead brings in (and walks) the stored tiles of every
    // fragment that the range's cells come from, and decodes nothing; the reads that
    // follow touch only tiles that were asked for.
    let (array, expected) = fixture("dense_basic");
    let store = std::sync::Arc::new(MemoryStore::from_dir(&array).unwrap());
    let view = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20).unwrap();
    let fields = expected["fragments"][0]["fields"].as_array().unwrap();
    let field = fields.iter().find(|f| f["name"] == "f64_zstd").unwrap();
    let data = format!("/{}", field["files"]["data"].as_str().unwrap());
    for path in ["latest/f64_zstd/values.bin", "latest/array.nc"] {
        let node = view.resolve(path).unwrap();
        let size = view.size(node).unwrap();
        let decoded = view.chunks_decoded();
        store.keep_journal();
        view.read_ahead(node, 0, size).unwrap();
        assert_eq!(view.chunks_decoded(), decoded, "{path}: read-ahead decoded");
        let mut ahead = std::collections::BTreeSet::new();
        for access in store.journal_entries() {
            if let Access::ReadAhead { key, .. } = access {
                if key.ends_with(&data) {
                    ahead.insert(key);
                }
            }
        }
        view.read_at(node, 0, size).unwrap();
        let mut read = std::collections::BTreeSet::new();
        for access in store.journal_entries() {
            if let Access::Read { key, .. } = access {
                if key.ends_with(&data) {
                    read.insert(key);
                }
            }
        }
        assert!(!read.is_empty(), "{path}: the read reads no fragment file");
        assert_eq!(ahead, read, "{path}: the fragments read ahead");
    }
}
