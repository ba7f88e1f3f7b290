//! The Zarr store in the tree: listing, lookup, sizes and reads of `zarr/` (the store's
//! facts are [`crate::encode::zarr`]'s).

use std::sync::Arc;

use serde_json::Value;

use super::node::ZNode;
use super::place::zarr_dir;
use super::vlen::VlenChunk;
use crate::array::field::FieldRole;
use crate::encode::zarr::{
    self, key_v2, key_v3, parse_key, Description, ZArray, ZDesc, ZField, ZMeta,
};
use crate::error::{Error, Result};
use crate::format::schema::ArraySchema;
use crate::read::merge::Merged;
use crate::view::cache::slice_into;
use crate::view::names;
use crate::view::nodes::Ino;
use crate::view::tiledb::array_tree::ArrayTree;
use crate::view::tiledb::node::Node;
use crate::view::tiledb::node::When;

/// What `array.json` says of `zarr/`: the arrays shown, and those not shown with why.
pub(in crate::view::tiledb) fn summary(schema: &ArraySchema) -> Value {
    zarr::summary(schema, names::encode)
}

/// The store of a merged state (or why it has none).
fn build_store(merged: &Merged) -> std::result::Result<Description, String> {
    let fields: Vec<ZField<'_>> = merged
        .fields
        .iter()
        .enumerate()
        .map(|(index, f)| ZField {
            index,
            name: &f.name,
            attribute: f.role == FieldRole::Attribute,
            datatype: f.datatype,
            cell_val_num: f.cell_val_num,
            nullable: f.nullable,
            fill: &f.fill,
            fill_valid: f.fill_valid,
        })
        .collect();
    zarr::describe(&merged.schema, &fields, names::encode)
}

impl ArrayTree {
    /// The state at `w` and its store, built once per state and generation of it.
    pub(super) fn zstore(&self, w: When) -> Result<(Arc<Merged>, Arc<Description>)> {
        // Filed under the generation the merge was made at: never a store of one
        // state under another's generation.
        let (generation, merged) = self.merged_keyed(w)?;
        let store = self
            .zarr_stores
            .get_or_build(w, generation, || build_store(&merged))
            .map_err(|why| Error::NotFound(format!("{}: {why}", zarr_dir(w))))?;
        Ok((merged, store))
    }

    /// Array `a` of a state's store, or why it is missing.
    fn zarray<'s>(&self, w: When, store: &'s Description, a: ZArray) -> Result<&'s ZDesc> {
        store
            .get(a)
            .ok_or_else(|| Error::NotFound(format!("{}: {a}", zarr_dir(w))))
    }

    /// Whether a state of this array has a `zarr/` folder (dense arrays do).
    pub(in crate::view::tiledb) fn has_zarr(&self, w: When) -> bool {
        match w {
            None => zarr::has_store(&self.array().latest_schema().schema).is_ok(),
            Some(_) => self.zstore(w).is_ok(),
        }
    }

    pub(in crate::view::tiledb) fn zarr_list(
        &self,
        w: When,
        node: &ZNode,
    ) -> Result<Vec<(String, Node)>> {
        let (merged, store) = self.zstore(w)?;
        let z = |n: ZNode| Node::Zarr(w, n);
        let meta = |m: ZMeta, n: ZNode| (m.file_name().to_string(), z(n));
        Ok(match node {
            ZNode::Root => {
                let mut out = vec![
                    meta(ZMeta::Zgroup, ZNode::GroupMeta(ZMeta::Zgroup)),
                    meta(ZMeta::Zattrs, ZNode::GroupMeta(ZMeta::Zattrs)),
                    meta(ZMeta::ZarrJson, ZNode::GroupMeta(ZMeta::ZarrJson)),
                ];
                out.extend(
                    store
                        .arrays
                        .iter()
                        .map(|d| (d.name.clone(), z(ZNode::Array(d.array)))),
                );
                out
            }
            ZNode::Array(a) => {
                let d = self.zarray(w, &store, *a)?;
                let mut out = vec![
                    meta(ZMeta::Zarray, ZNode::ArrayMeta(*a, ZMeta::Zarray)),
                    meta(ZMeta::Zattrs, ZNode::ArrayMeta(*a, ZMeta::Zattrs)),
                    meta(ZMeta::ZarrJson, ZNode::ArrayMeta(*a, ZMeta::ZarrJson)),
                ];
                let chunks = d.chunk_files(&merged.written_domains());
                if !chunks.is_empty() {
                    out.push(("c".to_string(), z(ZNode::KeyDir(*a, Vec::new()))));
                }
                out.extend(
                    chunks
                        .into_iter()
                        .map(|c| (key_v2(&c), z(ZNode::Chunk(*a, c)))),
                );
                out
            }
            ZNode::KeyDir(a, prefix) => {
                let d = self.zarray(w, &store, *a)?;
                let last = prefix.len() + 1 == d.shape.len();
                let next = d.next_keys(&merged.written_domains(), prefix);
                next.into_iter()
                    .map(|k| {
                        let mut c = prefix.clone();
                        c.push(k);
                        let node = if last {
                            ZNode::KeyChunk(*a, c)
                        } else {
                            ZNode::KeyDir(*a, c)
                        };
                        (k.to_string(), z(node))
                    })
                    .collect()
            }
            file @ (ZNode::GroupMeta(_)
            | ZNode::ArrayMeta(..)
            | ZNode::Chunk(..)
            | ZNode::KeyChunk(..)) => return Err(Error::NotDirectory(self.zarr_path(w, file))),
        })
    }

    /// A child by name: chunk keys are parsed, not searched for in a listing.
    pub(in crate::view::tiledb) fn zarr_lookup(
        &self,
        w: When,
        parent: &ZNode,
        name: &str,
    ) -> Result<Node> {
        let missing = || Error::NotFound(format!("{}/{name}", self.zarr_path(w, parent)));
        let z = |n: ZNode| Node::Zarr(w, n);
        match parent {
            ZNode::Array(a) if !name.starts_with('.') && name != "zarr.json" && name != "c" => {
                let (merged, store) = self.zstore(w)?;
                let d = self.zarray(w, &store, *a)?;
                let c = parse_key(name, '.', &d.chunk_counts()).ok_or_else(missing)?;
                match d.chunk_exists(&merged.written_domains(), &c) {
                    true => Ok(z(ZNode::Chunk(*a, c))),
                    false => Err(missing()),
                }
            }
            ZNode::KeyDir(a, prefix) => {
                let (merged, store) = self.zstore(w)?;
                let d = self.zarray(w, &store, *a)?;
                let k = name
                    .parse::<u64>()
                    .ok()
                    .filter(|k| k.to_string() == name)
                    .ok_or_else(missing)?;
                let mut c = prefix.clone();
                c.push(k);
                if !d.chunk_exists(&merged.written_domains(), &c) {
                    return Err(missing());
                }
                Ok(z(match c.len() == d.shape.len() {
                    true => ZNode::KeyChunk(*a, c),
                    false => ZNode::KeyDir(*a, c),
                }))
            }
            // The group, an array's metadata and `c`'s first level: by their listing.
            ZNode::Root
            | ZNode::Array(_)
            | ZNode::GroupMeta(_)
            | ZNode::ArrayMeta(..)
            | ZNode::Chunk(..)
            | ZNode::KeyChunk(..) => self
                .zarr_list(w, parent)?
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, node)| node)
                .ok_or_else(missing),
        }
    }

    /// Fails with `NotFound` unless the node is there now.
    pub(in crate::view::tiledb) fn zarr_check(&self, w: When, node: &ZNode) -> Result<()> {
        // The root's `zarr/` follows from the schema, as the root listing shows it: it
        // stays a folder (whose listing fails) when a fragment cannot be read.
        if w.is_none() && matches!(node, ZNode::Root) {
            return match self.has_zarr(None) {
                true => Ok(()),
                false => Err(Error::NotFound("zarr/: not a dense array".into())),
            };
        }
        let (merged, store) = self.zstore(w)?;
        match node {
            ZNode::Root | ZNode::GroupMeta(_) => Ok(()),
            ZNode::Array(a) | ZNode::ArrayMeta(a, _) => self.zarray(w, &store, *a).map(|_| ()),
            ZNode::Chunk(a, c) | ZNode::KeyDir(a, c) | ZNode::KeyChunk(a, c) => {
                match self
                    .zarray(w, &store, *a)?
                    .chunk_exists(&merged.written_domains(), c)
                {
                    true => Ok(()),
                    false => Err(Error::NotFound(self.zarr_path(w, node))),
                }
            }
        }
    }

    pub(in crate::view::tiledb) fn zarr_parent(&self, w: When, node: &ZNode) -> Node {
        match node.parent() {
            Some(p) => Node::Zarr(w, p),
            None => match w {
                None => Node::Root,
                Some(_) => Node::State(w),
            },
        }
    }

    /// The size of a file if it is known without rendering it: chunks of fixed-size
    /// elements from the grid, of variable-length ones once rendered (else `None`, and
    /// `stat` shows 0); metadata rendered.
    pub(in crate::view::tiledb) fn zarr_known_size(
        &self,
        ino: Ino,
        w: When,
        node: &ZNode,
    ) -> Result<Option<u64>> {
        if let ZNode::Chunk(a, _) | ZNode::KeyChunk(a, _) = node {
            let (_, store) = self.zstore(w)?;
            if self.zarray(w, &store, *a)?.fixed_chunk_bytes().is_none() {
                return Ok(self.vlen_known_size(ino));
            }
        }
        self.zarr_size(ino, w, node).map(Some)
    }

    /// The exact size of a file: chunks from the grid (variable-length ones rendered),
    /// metadata rendered.
    pub(in crate::view::tiledb) fn zarr_size(
        &self,
        ino: Ino,
        w: When,
        node: &ZNode,
    ) -> Result<u64> {
        match node {
            ZNode::Chunk(a, c) | ZNode::KeyChunk(a, c) => {
                let (merged, store) = self.zstore(w)?;
                let d = self.zarray(w, &store, *a)?;
                match d.fixed_chunk_bytes() {
                    Some(size) => Ok(size),
                    None => self.vlen_size(ino, &self.vlen_chunk(w, &merged, d, c, node)?),
                }
            }
            ZNode::Root | ZNode::Array(_) | ZNode::KeyDir(..) => Ok(0),
            ZNode::GroupMeta(_) | ZNode::ArrayMeta(..) => Ok(self.zarr_meta(w, node)?.len() as u64),
        }
    }

    /// Chunk `c` of variable-length array `d` of the state at `w`.
    fn vlen_chunk<'a>(
        &self,
        w: When,
        merged: &'a Merged,
        d: &'a ZDesc,
        c: &'a [u64],
        node: &ZNode,
    ) -> Result<VlenChunk<'a>> {
        let ZArray::Values(field) = d.array else {
            return Err(Error::NotFound(format!(
                "{}: not an array of strings",
                self.zarr_path(w, node)
            )));
        };
        Ok(VlenChunk {
            w,
            merged,
            desc: d,
            field,
            chunk: c,
            key: match node {
                ZNode::KeyChunk(..) => key_v3(c),
                // A v2 chunk (other nodes have no key, and no chunk to name).
                ZNode::Chunk(..)
                | ZNode::Root
                | ZNode::GroupMeta(_)
                | ZNode::Array(_)
                | ZNode::ArrayMeta(..)
                | ZNode::KeyDir(..) => key_v2(c),
            },
        })
    }

    /// Appends bytes `[offset, offset + len)` of a file to `out` (fewer at its end).
    pub(in crate::view::tiledb) fn zarr_read_into(
        &self,
        ino: Ino,
        w: When,
        node: &ZNode,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (a, c) = match node {
            ZNode::Chunk(a, c) | ZNode::KeyChunk(a, c) => (*a, c),
            ZNode::Root | ZNode::Array(_) | ZNode::KeyDir(..) => {
                return Err(Error::IsDirectory(self.zarr_path(w, node)))
            }
            ZNode::GroupMeta(_) | ZNode::ArrayMeta(..) => {
                slice_into(&self.zarr_meta(w, node)?, offset, len, out);
                return Ok(());
            }
        };
        let (merged, store) = self.zstore(w)?;
        let d = self.zarray(w, &store, a)?;
        let Some(chunk_bytes) = d.fixed_chunk_bytes() else {
            let chunk = self.vlen_chunk(w, &merged, d, c, node)?;
            return self.vlen_read_into(ino, &chunk, offset, len, out);
        };
        let end = offset.saturating_add(len).min(chunk_bytes);
        if offset >= end {
            return Ok(());
        }
        // Whole cells: one element, a cell's values, or a validity byte.
        let size = d.cell_bytes().max(1);
        let (first, last) = (offset / size, end.div_ceil(size));
        let before = out.len();
        match a {
            ZArray::Values(f) | ZArray::Validity(f) => {
                let validity = matches!(a, ZArray::Validity(_));
                merged.region_into(f, validity, &d.region(c), first, last - first, out)?;
            }
            ZArray::Coords(_) => {
                let start = d.region(c)[0].0;
                for k in first..last {
                    let v = (start + i128::from(k)) as i64;
                    out.extend_from_slice(&v.to_le_bytes()[..size as usize]);
                }
            }
        }
        // Cut to the bytes asked for (a read need not start at a cell; the cells may
        // come short of it, and then fewer bytes are returned, never a panic).
        cut(out, before, offset - first * size, end - offset);
        Ok(())
    }

    /// The bytes of a metadata file.
    pub(super) fn zarr_meta(&self, w: When, node: &ZNode) -> Result<Vec<u8>> {
        let (merged, store) = self.zstore(w)?;
        let value = match node {
            ZNode::GroupMeta(meta) => {
                store.group_document(*meta, &self.array().location(), w, &merged.schema_name)
            }
            ZNode::ArrayMeta(a, meta) => self.zarray(w, &store, *a)?.document(*meta),
            other => return Err(Error::IsDirectory(self.zarr_path(w, other))),
        };
        Ok(crate::view::tiledb::json::to_bytes(&value))
    }

    /// A node's path as the user sees it (from the mount's root), for messages; an
    /// array the state no longer has is described instead of named.
    fn zarr_path(&self, w: When, node: &ZNode) -> String {
        let dir = zarr_dir(w);
        let name = |a: ZArray| {
            self.zstore(w)
                .ok()
                .and_then(|(_, store)| store.get(a).map(|d| d.name.clone()))
                .unwrap_or_else(|| format!("({a})"))
        };
        match node {
            ZNode::Root => dir,
            ZNode::GroupMeta(m) => format!("{dir}/{}", m.file_name()),
            ZNode::Array(a) => format!("{dir}/{}", name(*a)),
            ZNode::ArrayMeta(a, m) => format!("{dir}/{}/{}", name(*a), m.file_name()),
            ZNode::Chunk(a, c) => format!("{dir}/{}/{}", name(*a), key_v2(c)),
            ZNode::KeyDir(a, c) | ZNode::KeyChunk(a, c) => {
                format!("{dir}/{}/{}", name(*a), key_v3(c))
            }
        }
    }
}

/// Keeps `len` bytes of `out[before..]` from `skip` on, clamped to what is there.
fn cut(out: &mut Vec<u8>, before: usize, skip: u64, len: u64) {
    let have = out.len().saturating_sub(before) as u64;
    let skip = skip.min(have);
    let keep = len.min(have - skip);
    out.drain(before..before + skip as usize);
    out.truncate(before + keep as usize);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::view::FileTree;

    fn tree(name: &str) -> ArrayTree {
        let array = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/features")
            .join(name);
        ArrayTree::open_path(&array, Default::default(), 16 << 20).unwrap()
    }

    /// Listings, lookups, sizes and reads of every file under `zarr/` share one store per
    /// state; another timestamp, or a rescan that changed the state, is another.
    #[test]
    fn a_state_s_store_is_built_once() {
        let t = tree("merge_dense_overlap");
        let mut files = 0;
        for _ in 0..2 {
            let mut dirs = vec![t.resolve("zarr").unwrap()];
            while let Some(dir) = dirs.pop() {
                for e in t.list(dir).unwrap() {
                    if e.is_dir() {
                        dirs.push(e.ino);
                    } else {
                        t.read_at(e.ino, 0, 1 << 20).unwrap();
                        files += 1;
                    }
                }
            }
        }
        assert!(files > 20, "{files} files read");
        assert_eq!(t.zarr_stores.builds(), 1);
        t.resolve("zarr/i32/0.0").unwrap();
        t.resolve("zarr/i32/c/1/1").unwrap();
        assert_eq!(t.zarr_stores.builds(), 1);
        // A rescan that did not change the state keeps its store (one that did is
        // `tests/merged.rs`' `a_state_stays_merged_until_a_rescan_changes_it`).
        t.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        t.zarr_list(None, &ZNode::Root).unwrap();
        assert_eq!(t.zarr_stores.builds(), 1);
    }

    /// A read's cut keeps what it can: cells that came short of the range give fewer
    /// bytes, never a panic.
    #[test]
    fn cuts_clamp_to_the_bytes_the_cells_gave() {
        let mut out = b"xxabcdef".to_vec();
        cut(&mut out, 2, 1, 3);
        assert_eq!(out, b"xxbcd");
        let mut out = b"xxab".to_vec();
        cut(&mut out, 2, 5, 3);
        assert_eq!(out, b"xx");
        let mut out = b"xxabc".to_vec();
        cut(&mut out, 2, 1, 10);
        assert_eq!(out, b"xxbc");
        let mut out = b"xx".to_vec();
        cut(&mut out, 2, 0, 4);
        assert_eq!(out, b"xx");
    }

    /// Messages name paths, as the user sees them, never internal types.
    #[test]
    fn messages_name_paths() {
        let t = tree("merge_dense_overlap");
        let err = |r: Result<Node>| r.err().unwrap().to_string();
        let i32 = ZArray::Values(
            t.merged(None)
                .unwrap()
                .fields
                .iter()
                .position(|f| f.name == "i32")
                .unwrap(),
        );
        assert_eq!(
            err(t.zarr_lookup(None, &ZNode::Array(i32), "9.9")),
            "zarr/i32/9.9: no such file or directory"
        );
        assert_eq!(
            err(t.zarr_lookup(None, &ZNode::KeyDir(i32, vec![0]), "7")),
            "zarr/i32/c/0/7: no such file or directory"
        );
        assert_eq!(
            t.zarr_list(None, &ZNode::Chunk(i32, vec![0, 0]))
                .err()
                .unwrap()
                .to_string(),
            "zarr/i32/0.0: not a directory"
        );
        let gone = ZArray::Values(99);
        assert_eq!(
            t.zarr_check(None, &ZNode::Array(gone))
                .err()
                .unwrap()
                .to_string(),
            "zarr: the values of field 99: no such file or directory"
        );
        assert_eq!(
            t.zarr_check(Some(1), &ZNode::KeyChunk(gone, vec![0, 0]))
                .err()
                .unwrap()
                .to_string(),
            "at/1/zarr: the values of field 99: no such file or directory"
        );
        let mut out = Vec::new();
        assert_eq!(
            t.zarr_read_into(0, None, &ZNode::KeyDir(i32, vec![]), 0, 1, &mut out)
                .err()
                .unwrap()
                .to_string(),
            "zarr/i32/c: is a directory"
        );
        let sparse = tree("merge_sparse_overlap");
        let why = sparse
            .zarr_list(None, &ZNode::Root)
            .err()
            .unwrap()
            .to_string();
        assert!(why.starts_with("zarr: a sparse array"), "{why}");
        for (_, node) in t.zarr_list(None, &ZNode::Array(i32)).unwrap() {
            if let Node::Zarr(_, z) = node {
                assert!(!t.zarr_path(None, &z).contains('('), "{z:?}");
            }
        }
    }
}
