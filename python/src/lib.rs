//! `fragfs._fragfs`: the tree of files `fragfs mount` shows, read in-process from Python
//! (no FUSE, no server): [`tree::Tree`] opens what `fragfs cat` opens and reads the same
//! bytes. The Python package (`python/python/fragfs/`) re-exports it and adds the fsspec
//! filesystem on top.
//!
//! Files: `tree.rs` (the `Tree` class: listings, sizes, byte ranges), `refs.rs` (kerchunk
//! reference sets and the `fragfs_tile` codec's decoder), `options.rs` (the
//! keyword arguments, as the command line's options), `errors.rs` (fragfs errors as
//! Python's `OSError` family).

mod errors;
mod options;
mod refs;
mod tree;

use pyo3::prelude::*;

#[pymodule]
fn _fragfs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tree::Tree>()?;
    m.add_class::<refs::TileDecoder>()?;
    m.add_class::<refs::DecodedChunk>()?;
    m.add_function(wrap_pyfunction!(refs::refs_json, m)?)?;
    m.add_function(wrap_pyfunction!(refs::stored_tiles, m)?)?;
    m.add(
        "DEFAULT_INLINE_LIMIT",
        fragfs::view::tiledb::DEFAULT_INLINE_LIMIT,
    )?;
    m.add("DEFAULT_CACHE_SIZE", fragfs::view::DEFAULT_CACHE_SIZE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
