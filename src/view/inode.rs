//! Stable inode numbers: a [`Node`] packed into a `u64` and back, with no table.
//!
//! The kernel keys its dentry and page caches by inode number, and tools like `find`,
//! `du` and `tar` compare them, so a node must get the same number for the life of a
//! mount. Packing the node's own indices gives that for free, costs no memory for
//! 100,000 fragments, and lets the FUSE adapter answer any request from the number alone.
//!
//! Layout: kind in bits 60..64, fragment (or schema) index in bits 24..60, field index in
//! bits 4..24, raw file in bits 0..4. The root is 1, as FUSE requires.

use super::filo::FiloFile;
use super::{Node, RawFile};

const KIND_SHIFT: u32 = 60;
const FRAGMENT_SHIFT: u32 = 24;
const FRAGMENT_BITS: u32 = 36;
const FIELD_SHIFT: u32 = 4;
const FIELD_BITS: u32 = 20;

const FIXED: u64 = 0;
const SCHEMA_FILE: u64 = 1;
const FRAGMENT: u64 = 2;
const FOOTER_JSON: u64 = 3;
const TILES_JSON: u64 = 4;
const FIELD: u64 = 5;
const RAW: u64 = 6;
const NPY: u64 = 7;
const TEXT: u64 = 8;
const CELLS_CSV: u64 = 9;
const FILO_JSON: u64 = 10;
const FILO_COLUMN: u64 = 11;
const FILO_FILE: u64 = 12;

const RAW_FILES: [RawFile; 3] = [RawFile::Values, RawFile::Offsets, RawFile::Validity];

fn pack(kind: u64, fragment: usize, field: usize, low: u64) -> Option<u64> {
    let (fragment, field) = (fragment as u64, field as u64);
    if fragment >> FRAGMENT_BITS != 0 || field >> FIELD_BITS != 0 {
        return None;
    }
    Some(kind << KIND_SHIFT | fragment << FRAGMENT_SHIFT | field << FIELD_SHIFT | low)
}

/// The inode number of `node`; `None` only for indices too large to pack (more than
/// 2^36 fragments or 2^20 fields), which no array reaches.
pub fn to_ino(node: Node) -> Option<u64> {
    match node {
        Node::Root => Some(1),
        Node::ArrayJson => Some(2),
        Node::SchemaJson => Some(3),
        Node::SchemasDir => Some(4),
        Node::FragmentsDir => Some(5),
        Node::SchemaFile(i) => pack(SCHEMA_FILE, i, 0, 0),
        Node::Fragment(f) => pack(FRAGMENT, f, 0, 0),
        Node::FooterJson(f) => pack(FOOTER_JSON, f, 0, 0),
        Node::TilesJson(f) => pack(TILES_JSON, f, 0, 0),
        Node::Field(f, i) => pack(FIELD, f, i, 0),
        Node::Raw(f, i, raw) => {
            let low = RAW_FILES.iter().position(|&r| r == raw)? as u64;
            pack(RAW, f, i, low)
        }
        Node::Npy(f, i) => pack(NPY, f, i, 0),
        Node::Text(f, i) => pack(TEXT, f, i, 0),
        Node::CellsCsv(f) => pack(CELLS_CSV, f, 0, 0),
        Node::FiloJson => pack(FILO_JSON, 0, 0, 0),
        Node::FiloColumn(c) => pack(FILO_COLUMN, c, 0, 0),
        Node::FiloFile(c, file) => pack(FILO_FILE, c, 0, file.index()),
    }
}

/// The node an inode number stands for, or `None` for a number [`to_ino`] never gives.
/// Whether the indices exist in the array is for the view to check.
pub fn from_ino(ino: u64) -> Option<Node> {
    let kind = ino >> KIND_SHIFT;
    let fragment = ((ino >> FRAGMENT_SHIFT) & ((1 << FRAGMENT_BITS) - 1)) as usize;
    let field = ((ino >> FIELD_SHIFT) & ((1 << FIELD_BITS) - 1)) as usize;
    let low = ino & ((1 << FIELD_SHIFT) - 1);
    let node = match kind {
        FIXED => match ino {
            1 => Node::Root,
            2 => Node::ArrayJson,
            3 => Node::SchemaJson,
            4 => Node::SchemasDir,
            5 => Node::FragmentsDir,
            _ => return None,
        },
        SCHEMA_FILE => Node::SchemaFile(fragment),
        FRAGMENT => Node::Fragment(fragment),
        FOOTER_JSON => Node::FooterJson(fragment),
        TILES_JSON => Node::TilesJson(fragment),
        FIELD => Node::Field(fragment, field),
        RAW => Node::Raw(fragment, field, *RAW_FILES.get(low as usize)?),
        NPY => Node::Npy(fragment, field),
        TEXT => Node::Text(fragment, field),
        CELLS_CSV => Node::CellsCsv(fragment),
        FILO_JSON => Node::FiloJson,
        FILO_COLUMN => Node::FiloColumn(fragment),
        FILO_FILE => Node::FiloFile(fragment, FiloFile::from_index(low)?),
        _ => return None,
    };
    // Only the canonical packing of a node is valid: stray bits mean a forged number.
    (to_ino(node) == Some(ino)).then_some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_node_round_trips_and_numbers_are_distinct() {
        let nodes = [
            Node::Root,
            Node::ArrayJson,
            Node::SchemaJson,
            Node::SchemasDir,
            Node::FragmentsDir,
            Node::SchemaFile(0),
            Node::SchemaFile(7),
            Node::Fragment(0),
            Node::Fragment(99_999),
            Node::FooterJson(3),
            Node::TilesJson(3),
            Node::Field(3, 0),
            Node::Field(3, 1),
            Node::Raw(3, 1, RawFile::Values),
            Node::Raw(3, 1, RawFile::Offsets),
            Node::Raw(3, 1, RawFile::Validity),
            Node::Raw((1 << 36) - 1, (1 << 20) - 1, RawFile::Validity),
            Node::Npy(3, 1),
            Node::Text(3, 1),
            Node::CellsCsv(3),
            Node::FiloJson,
            Node::FiloColumn(4),
            Node::FiloFile(4, FiloFile::Timezone),
            Node::FiloFile(0, FiloFile::Values),
        ];
        let inos: Vec<u64> = nodes.iter().map(|&n| to_ino(n).unwrap()).collect();
        assert_eq!(inos[0], 1, "the root must be inode 1");
        for (n, &ino) in nodes.iter().zip(&inos) {
            assert_eq!(from_ino(ino), Some(*n));
        }
        let mut unique = inos.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), inos.len());
    }

    #[test]
    fn numbers_no_node_has_are_refused() {
        assert_eq!(from_ino(0), None);
        assert_eq!(from_ino(6), None);
        assert_eq!(from_ino(u64::MAX), None);
        // A raw file index past the known files, and stray bits in a fixed node.
        assert_eq!(from_ino(RAW << KIND_SHIFT | 3), None);
        assert_eq!(from_ino(FRAGMENT << KIND_SHIFT | 1), None);
        assert_eq!(to_ino(Node::Fragment(1 << 36)), None);
        assert_eq!(to_ino(Node::Field(0, 1 << 20)), None);
    }
}
