//! Where a state's store is shown, for messages.

use crate::view::tiledb::node::When;

/// The path of a state's `zarr/` folder: at the root for the latest state.
pub(in crate::view::tiledb) fn zarr_dir(w: When) -> String {
    match w {
        None => "zarr".to_string(),
        Some(t) => format!("at/{t}/zarr"),
    }
}
