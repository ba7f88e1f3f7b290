//! Laziness: opening and listing read no fragment metadata and decode no tile; a read
//! decodes only the chunks that overlap it.

mod common;

use common::*;
use fragfs::view::Node;

#[test]
fn opening_and_listing_fragments_parse_no_fragment_metadata() {
    let (array, expected) = fixture("consolidated");
    let view = open_view(&array, &expected).unwrap();
    let fragments = view.list(Node::FragmentsDir).unwrap();
    assert!(fragments.len() >= 2);
    for f in &fragments {
        view.stat(f.node).unwrap();
    }
    assert!(view.array().fragments.iter().all(|f| !f.meta_loaded()));
    // Looking inside one fragment parses that one only.
    view.list(fragments[0].node).unwrap();
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
    let (array, expected) = fixture("dense_basic");
    let view = open_view(&array, &expected).unwrap();
    let frag = expected["fragments"][0]["fragment_dir"].as_str().unwrap();
    let frag = frag.rsplit('/').next().unwrap();
    // i32: 4 tiles of 16 cells, one chunk each; f64_zstd: the same tiles, compressed.
    for field in ["i32", "f64_zstd"] {
        let before = view.chunks_decoded();
        let node = view
            .resolve(&format!("fragments/{frag}/{field}/values.bin"))
            .unwrap();
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
