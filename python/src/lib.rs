//! `fragfs._fragfs`: the tree of files `fragfs mount` shows, read in-process from Python
//! (no FUSE, no server): [`tree::Tree`] opens what `fragfs cat` opens and reads the same
//! bytes. The Python package (`python/python/fragfs/`) re-exports it and adds the fsspec
//! filesystem on top.
//!
//! Files: `tree.rs` (the `Tree` class: listings, sizes, byte ranges), `options.rs` (the
//! keyword arguments, as the command line's options), `errors.rs` (fragfs errors as
//! Python's `OSError` family).

mod errors;
mod options;
mod tree;

use pyo3::prelude::*;

#[pymodule]
fn _fragfs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tree::Tree>()?;
    m.add("DEFAULT_CACHE_SIZE", fragfs::view::DEFAULT_CACHE_SIZE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
