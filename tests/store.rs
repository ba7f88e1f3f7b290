//! What the store is asked, counted by the in-memory test store: the cost of opening
//! and listing an array and of a random read, in requests (what object storage bills
//! and waits for), and that a transient failure is tried again rather than remembered.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use fragfs::storage::memory::Requests;
use fragfs::storage::{MemoryStore, Store};
use fragfs::view::{ArrayTree, FileTree, Ino};

/// `fixture` served from memory, with the fragment list never refreshed by itself (so
/// the counts do not depend on how fast the test runs).
fn in_memory(fixture_name: &str) -> (ArrayTree, Arc<MemoryStore>, serde_json::Value) {
    let (array, expected) = fixture(fixture_name);
    let store = Arc::new(MemoryStore::from_dir(&array).unwrap());
    let tree = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20)
        .unwrap()
        .with_refresh_interval(Duration::MAX);
    (tree, store, expected)
}

fn since(store: &MemoryStore, before: Requests) -> Requests {
    let now = store.requests();
    Requests {
        lists: now.lists - before.lists,
        sizes: now.sizes - before.sizes,
        reads: now.reads - before.reads,
        ranges: now.ranges - before.ranges,
        bytes: now.bytes - before.bytes,
    }
}

/// Listing the fragment folder `ino` asks the store for one listing (of the fragment's
/// files) and one read (its footer), nothing else.
fn assert_looking_inside_costs_a_listing_and_a_footer(
    tree: &ArrayTree,
    store: &MemoryStore,
    ino: Ino,
) {
    let before = store.requests();
    tree.list(ino).unwrap();
    let inside = since(store, before);
    assert_eq!(
        (inside.lists, inside.sizes, inside.reads),
        (1, 0, 1),
        "{inside:?}"
    );
}

#[test]
fn opening_and_listing_fragments_cost_listings_and_one_read_per_small_file() {
    let (array, expected) = fixture("consolidated");
    let store = Arc::new(MemoryStore::from_dir(&array).unwrap());
    let schemas = store.list("__schema").unwrap().len() as u64;
    let commit_files = store
        .list("__commits")
        .unwrap()
        .iter()
        .filter(|e| [".vac", ".ign", ".con"].iter().any(|x| e.name.ends_with(x)))
        .count() as u64;
    store.reset_requests();
    let tree = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20)
        .unwrap()
        .with_refresh_interval(Duration::MAX);
    // The root, __schema/, __commits/ and __fragments/ are listed; each schema and each
    // vacuum/ignore/consolidated-commits file is read once, its size taken from the
    // listing (no size request).
    let open = store.requests();
    assert_eq!(
        (open.lists, open.sizes, open.reads),
        (4, 0, schemas + commit_files),
        "{open:?}"
    );
    // Listing fragments/ and stat-ing each fragment folder (`ls -l fragments/`) asks
    // the store nothing more: no fragment metadata is read.
    let before = store.requests();
    let fragments = tree.list(tree.resolve("fragments").unwrap()).unwrap();
    assert!(fragments.len() >= 2);
    for f in &fragments {
        tree.stat(f.ino).unwrap();
    }
    assert_eq!(since(&store, before).total(), 0);
    // Looking inside one fragment lists its folder (the sizes of all its files) and
    // reads its footer: two requests.
    assert_looking_inside_costs_a_listing_and_a_footer(&tree, &store, fragments[0].ino);
}

#[test]
fn on_a_remote_store_metadata_is_read_on_first_use_and_views_of_all_load_it_together() {
    let (array, expected) = fixture("consolidated");
    let store = Arc::new(MemoryStore::from_dir(&array).unwrap().as_remote());
    let tree = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20)
        .unwrap()
        .with_refresh_interval(Duration::MAX);
    let fragments = tree.list(tree.resolve("fragments").unwrap()).unwrap();
    let live = tree.array().fragments.len();
    assert!(live >= 2, "{live} fragments");
    // Looking inside one fragment reads that fragment's metadata only, remote or not.
    assert_looking_inside_costs_a_listing_and_a_footer(&tree, &store, fragments[0].ino);
    let loaded = |tree: &ArrayTree| -> usize {
        tree.array()
            .fragments
            .iter()
            .filter(|f| f.meta_loaded())
            .count()
    };
    assert_eq!(loaded(&tree), 1);
    // A view that needs every fragment (array.json) loads the rest, once each (on
    // several threads where the store is remote, however few they are).
    let before = store.requests();
    let json = read_all(&tree, tree.resolve("array.json").unwrap()).unwrap();
    assert!(!json.is_empty());
    assert_eq!(loaded(&tree), live);
    let rest = since(&store, before);
    assert_eq!(
        (rest.lists, rest.reads),
        (live as u64 - 1, live as u64 - 1),
        "{rest:?}"
    );
}

#[test]
fn a_read_inside_a_cold_tile_costs_two_requests_and_a_cached_chunk_none() {
    let (tree, store, expected) = in_memory("dense_2d");
    let frag = first_fragment(&expected);
    // A ZSTD field with 8 tiles of 12 cells (48 bytes each), one chunk per tile.
    let node = tree
        .resolve(&format!("fragments/{frag}/bs_dd_zstd/values.bin"))
        .unwrap();
    let tile = 12 * 4;
    assert_eq!(tree.size(node).unwrap(), 8 * tile);
    // The first read in the field loads its tile offsets too (one generic tile).
    tree.read_at(node, 0, 4).unwrap();
    // A read inside another, cold tile: its chunk headers, then its chunk.
    let before = store.requests();
    let bytes = tree.read_at(node, 5 * tile + 8, 16).unwrap();
    assert_eq!(bytes.len(), 16);
    let cold = since(&store, before);
    assert_eq!((cold.lists, cold.sizes, cold.reads), (0, 0, 2), "{cold:?}");
    // The chunk was cut by the read, so it is cached: the next read in it asks nothing.
    let before = store.requests();
    tree.read_at(node, 5 * tile + 24, 16).unwrap();
    assert_eq!(since(&store, before).total(), 0);
    // The same bytes as through the local folder.
    let local = open_view(&fixture("dense_2d").0, &expected).unwrap();
    let node = local
        .resolve(&format!("fragments/{frag}/bs_dd_zstd/values.bin"))
        .unwrap();
    assert_eq!(local.read_at(node, 5 * tile + 8, 16).unwrap(), bytes);
}

#[test]
fn a_tile_larger_than_the_walk_window_is_walked_in_several_reads() {
    let (array, expected) = fixture("dense_basic");
    let store = Arc::new(MemoryStore::from_dir(&array).unwrap().with_walk_window(32));
    let tree = ArrayTree::open(store.clone(), options_for(&expected), 64 << 20).unwrap();
    let local = open_view(&array, &expected).unwrap();
    let frag = first_fragment(&expected);
    for field in ["i32", "f64_zstd"] {
        let path = format!("fragments/{frag}/{field}/values.bin");
        let (a, b) = (tree.resolve(&path).unwrap(), local.resolve(&path).unwrap());
        assert_eq!(read_all(&tree, a).unwrap(), read_all(&local, b).unwrap());
    }
}

#[test]
fn a_transient_failure_is_tried_again_not_remembered() {
    let (tree, store, expected) = in_memory("sample");
    let frag = first_fragment(&expected);
    let folder = tree.resolve(&format!("fragments/{frag}")).unwrap();
    // The footer read fails (a network store's 503): the listing of the fragment fails
    // with EIO, and the metadata is not kept as failed.
    store.fail_next_reads(1);
    let err = tree.list(folder).unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert_eq!(err.errno(), libc::EIO);
    assert!(err.to_string().contains("injected failure"), "{err}");
    let array = tree.array();
    let fragment = array.fragment_named(&frag).unwrap();
    assert!(!fragment.meta_loaded(), "a transient failure is not kept");
    assert!(
        tree.list(folder).unwrap().len() > 3,
        "the next listing works"
    );
    // The same for a data read: one EIO, then the right bytes.
    let node = tree
        .resolve(&format!("fragments/{frag}/temperature/values.bin"))
        .unwrap();
    let size = tree.size(node).unwrap();
    store.fail_next_reads(1);
    assert!(tree.read_at(node, 0, size).unwrap_err().is_transient());
    let local = open_view(&fixture("sample").0, &expected).unwrap();
    let want = read_all(
        &local,
        local
            .resolve(&format!("fragments/{frag}/temperature/values.bin"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(tree.read_at(node, 0, size).unwrap(), want);
}

/// A rescan (live refresh) lists the array's own folders only, never one request per
/// fragment: not for `__fragments/` arrays, nor for formats 1-4, whose fragment folders
/// sit at the root and are committed by a file inside (found once, then known).
#[test]
fn a_rescan_lists_the_arrays_folders_only() {
    let legacy = tiledb_test_inputs().join("non_split_coords_v1_4_0");
    // The root, __schema/, __commits/ and __fragments/; a format-4 array has the root.
    for (array, lists) in [(fixture("consolidated").0, 4), (legacy, 1)] {
        let store = Arc::new(MemoryStore::from_dir(&array).unwrap());
        let tree = ArrayTree::open(store.clone(), Default::default(), 64 << 20).unwrap();
        let live = tree.array().fragments.len();
        assert!(live >= 1);
        let before = store.requests();
        let again = tree.array().rescan().unwrap();
        let cost = since(&store, before);
        assert_eq!(again.fragments.len(), live);
        assert_eq!(cost.lists, lists, "{}: {cost:?}", array.display());
        assert_eq!(cost.sizes, 0, "{cost:?}");
    }
}
