//! Reading the payload of a real generic tile (a schema, a `.del`, a `__meta` or an
//! enumeration file) in a parser's tests: the parsers in `src/format` take the payload,
//! and the tiles on disk are filtered, so every such test first decodes the tile the
//! way the array layer does.

use std::path::{Path, PathBuf};

use crate::array::generic_tile::decode_generic_tile;
use crate::error::Place;

/// The payload of the unencrypted generic tile `bytes`; panics naming `what` (the
/// file, or where the tile is embedded) when it does not decode.
pub fn tile_payload(bytes: &[u8], what: &str) -> Vec<u8> {
    match decode_generic_tile(bytes, None, &Place::file(what.to_string())) {
        Ok((_, payload)) => payload,
        Err(e) => panic!("{what}: {e}"),
    }
}

/// The payload of the generic tile that is the whole file `path`.
pub fn file_tile_payload(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    tile_payload(&bytes, &path.display().to_string())
}

/// `src/format/testdata/<sub>`: real files written by TileDB-Py (`generate.py` there).
pub fn format_testdata(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/format/testdata")
        .join(sub)
}
