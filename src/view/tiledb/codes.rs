//! The codes of an enumerated attribute's cells: the label a code stands for, and the
//! codes that stand for none.

use crate::format::datatype::decode_int;
use crate::format::enumeration::Enumeration;
use crate::format::Datatype;
use crate::read::cells::Cells;
use crate::view::text;

/// The text of an enumerated attribute's cell: the label its code stands for, or the code
/// itself (a number) when it is outside the enumeration.
pub(super) fn label_text(out: &mut Vec<u8>, e: &Enumeration, code_type: Datatype, code: &[u8]) {
    let label = decode_int(code, code_type)
        .and_then(|c| usize::try_from(c).ok())
        .and_then(|c| e.value(c));
    match label {
        Some(label) => text::cell(out, e.datatype, label),
        None => text::cell(out, code_type, code),
    }
}

/// How many valid codes of `cells` fall outside the enumeration.
pub(super) fn codes_outside(e: &Enumeration, code_type: Datatype, cells: &Cells) -> u64 {
    (0..cells.len())
        .filter(|&k| cells.is_valid(k))
        .filter(|&k| {
            decode_int(cells.value(k), code_type)
                .and_then(|c| usize::try_from(c).ok())
                .is_none_or(|c| c >= e.len())
        })
        .count() as u64
}
