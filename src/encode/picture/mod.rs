//! `fragments.svg`: a picture of where an array's fragments lie in its domain and when
//! they were written, which are visible, consolidated, replaced or later at the
//! picture's time, and the deletes (docs/pictures.md). Sans-IO like the other writers:
//! the view describes the fragments from their metadata ([`Picture`]), this folder
//! places them ([`layout`](layout::layout)) and writes the SVG ([`svg`]); the same
//! description always gives the same bytes.

mod draw;
mod layout;
mod model;
mod scale;

pub use draw::{esc, svg};
pub use layout::{AGGREGATE_ABOVE, MAX_MBRS, MAX_SHAPES};
pub use model::{Axis, AxisKind, Condition, Fragment, Picture, Status};
pub use scale::iso;

#[cfg(test)]
mod tests;
