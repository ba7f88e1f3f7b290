//! An array on disk: its schemas, which fragments are live, and lazily loaded fragment
//! metadata. Nothing here knows about the virtual tree.

mod conditions;
pub mod dense_grid;
pub mod field;
pub mod fragment;
pub mod generic_tile;
pub mod group;
pub mod layout;
pub mod liveness;
pub mod loaders;
pub mod metadata;
mod open;
mod options;
mod schemas;
pub mod visibility;

pub use conditions::ConditionCommit;
pub use fragment::{Fragment, FragmentId};
pub use liveness::Ignored;
pub use open::{Array, ReplacedFragment};
pub use options::{parse_key, OpenOptions};
pub use schemas::{SchemaFile, ENUMERATIONS_DIR, LEGACY_SCHEMA};
