//! What a face is: a kind of file in every folder of one kind, which declares all there is
//! to know about its file (name, media type, existence, size, bytes, read-ahead, and its
//! summary line in `array.json` and `read.json`).

use serde_json::Value;

use crate::error::Result;
use crate::format::schema::ArraySchema;
use crate::view::nodes::Ino;

use super::super::array_tree::ArrayTree;
use super::super::node::When;

/// Where a face's file is: the tree, the file's inode number (the key of what the views
/// cache for it) and its folder (a field, or a fragment or state folder).
pub(in crate::view::tiledb) struct At<'a, P> {
    pub tree: &'a ArrayTree,
    pub ino: Ino,
    pub place: P,
}

/// A kind of file in every folder of one kind. `P` is what names such a folder:
/// [`FieldOf`] for field folders, [`Folder`] for fragment and state folders.
pub(in crate::view::tiledb) trait Face<P>: Sync {
    /// The file's name in its folder.
    fn name(&self) -> &'static str;

    /// The file's media type, as the doors send it (`Content-Type`).
    fn mime(&self) -> &'static str;

    /// The face's line in `array.json` (what a schema makes of it) and in `read.json`
    /// (what a merged state makes of it), for a face that has one.
    fn summary(&self) -> Option<&'static Summary> {
        None
    }

    /// Whether the folder at `place` has this file. Every listing asks it, so it looks
    /// at metadata only: never a pass over cells, never a decoded tile.
    fn exists(&self, tree: &ArrayTree, place: P) -> Result<bool>;

    /// The size if it is known without rendering the file or counting cells, else `None`:
    /// `stat` then shows 0 and the mount serves the file with direct I/O (as procfs does)
    /// until a read or [`Face::size`] learns it.
    fn known_size(&self, at: &At<'_, P>) -> Result<Option<u64>>;

    /// Whether opening the file learns its size first (rendering or counting what it
    /// must): a reader of the format needs it before its first read (Parquet's and
    /// Arrow's footers are at the end, found from the size), where one of a text file
    /// reads on until the end comes.
    fn sized_on_open(&self) -> bool {
        false
    }

    /// The exact size, rendering or counting what it must.
    fn size(&self, at: &At<'_, P>) -> Result<u64>;

    /// Appends bytes `[offset, offset + len)` of the file (fewer at its end) to `out`.
    fn read_into(&self, at: &At<'_, P>, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()>;

    /// Prepares what a read of the range will need, for a sequential reader. Files
    /// rendered whole have nothing to prepare: the default.
    fn read_ahead(&self, _at: &At<'_, P>, _offset: u64, _len: u64) -> Result<()> {
        Ok(())
    }
}

/// A face's summary line: under `key`, what a schema makes of the face (`array.json`:
/// whether and how the array's files of this kind are shown) and what a merged state
/// makes of it (`read.json`).
pub(in crate::view::tiledb) struct Summary {
    pub key: &'static str,
    pub of_schema: fn(&ArraySchema) -> Value,
    pub of_state: fn(&ArrayTree, When) -> Result<Value>,
}
