//! Helpers shared by the unit tests in `src/` (the integration tests have their own in
//! `tests/common`), so each rule is written once: how a test that needs the shared
//! corpus skips or fails, and how a test reads a generic tile from a file.

mod corpus;
mod generic_tile;

pub use corpus::shared_corpus_or_skip;
pub use generic_tile::{file_tile_payload, format_testdata, tile_payload};
