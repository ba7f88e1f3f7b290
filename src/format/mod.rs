//! Pure parsers over byte slices: no files, no FUSE. Every format version lives here.

pub mod datatype;
pub mod error;
pub mod pipeline;
pub mod reader;

pub use datatype::{Datatype, ElementKind};
pub use error::{FormatError, Result};
pub use pipeline::{Filter, FilterPipeline};
pub use reader::Reader;
