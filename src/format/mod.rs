//! Pure parsers over byte slices: no files, no FUSE. Every format version lives here.

pub mod chunked;
pub mod commits;
pub mod condition;
pub mod condition_eval;
pub mod coords;
pub mod datatype;
pub mod enumeration;
pub mod error;
pub mod footer;
pub mod fragment_metadata;
pub mod generic_tile;
pub mod group;
pub mod legacy_metadata;
pub mod metadata;
pub mod name;
pub mod pipeline;
pub mod reader;
pub mod schema;

pub use datatype::{Datatype, ElementKind};
pub use error::FormatError;
pub use pipeline::{Filter, FilterPipeline};
pub use reader::Reader;
