//! `values.npy`: `values.bin` of a fixed-size field behind a NumPy header, so
//! `np.load(path, mmap_mode='r')` maps it; a dense state's is shaped like its box.

use crate::encode::npy;
use crate::error::Result;

use super::super::array_tree::ArrayTree;
use super::super::node::FieldOf;
use super::spliced::HeaderAndValues;
use super::At;

pub(super) static NPY: HeaderAndValues = HeaderAndValues {
    name: "values.npy",
    mime: "application/octet-stream",
    applies: fixed_size,
    header,
    with_values: true,
};

fn fixed_size(tree: &ArrayTree, of: FieldOf) -> Result<bool> {
    Ok(!tree.field_facts(of)?.is_var())
}

fn header(at: &At<'_, FieldOf>) -> Result<Vec<u8>> {
    let f = at.facts()?;
    Ok(match at.shape()? {
        Some(shape) => npy::shaped_header(f.datatype, f.cell_val_num, &shape),
        None => npy::header(f.datatype, f.cell_val_num, at.cell_count()?),
    })
}
