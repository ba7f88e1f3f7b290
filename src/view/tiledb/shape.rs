//! The shape of an array's tree: which folders hold what, in listing order, which node a
//! name in a folder is, and whether a node is in the tree now.

use crate::error::{Error, Result};
use crate::view::entry::Kind;
use crate::view::file_tree::FileTree;
use crate::view::names;
use crate::view::nodes::{Ino, ROOT};
use crate::view::subtree::Inside;

use super::array_tree::ArrayTree;
use super::faces::{self, Table};
use super::node::{EnumFile, FieldOf, Folder, Node};
use super::picture::PICTURE;
use super::zarr::ZNode;

impl ArrayTree {
    /// Fails with `NotFound` unless the node is in the tree now (a vacuumed fragment's
    /// nodes are gone, but for open files).
    pub(super) fn check_exists(&self, node: &Node) -> Result<()> {
        let absent = |what: &str| Err(Error::NotFound(what.to_string()));
        match node {
            Node::Root
            | Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::FragmentsDir
            | Node::AtDir
            | Node::LabelsDir
            // Every timestamp has a state: whether it can be merged is for its files'
            // reads to tell (a stat must not need every fragment's metadata).
            | Node::State(_)
            | Node::Picture(_)
            // A label's nodes are checked by the label's tree.
            | Node::Label(_) => Ok(()),
            Node::SchemaFile(name) => match self.array().schemas.iter().any(|s| &s.name == name) {
                true => Ok(()),
                false => absent(&format!("schema {name}")),
            },
            Node::Fragment(f) => self.fragment(*f).map(|_| ()),
            Node::FolderFile(folder, id) => {
                if let Folder::Fragment(f) = folder {
                    self.fragment(*f)?;
                }
                match Folder::face(*id).exists(self, *folder)? {
                    true => Ok(()),
                    false => absent(Folder::face(*id).name()),
                }
            }
            Node::Field(of) => self.field_facts(*of).map(|_| ()),
            Node::FieldFile(of, id) => match FieldOf::face(*id).exists(self, *of)? {
                true => Ok(()),
                false => absent(FieldOf::face(*id).name()),
            },
            Node::Enum(of) => match self.field_enumeration_name(of)? {
                Some(_) => Ok(()),
                None => absent("enumeration"),
            },
            Node::EnumFile(of, file) => {
                let (e, _) = self
                    .field_enumeration(of)?
                    .ok_or_else(|| Error::NotFound("enumeration".into()))?;
                match file {
                    EnumFile::Offsets if !e.is_var() => {
                        absent("offsets.bin of a fixed-size enumeration")
                    }
                    EnumFile::Values | EnumFile::Offsets | EnumFile::Text | EnumFile::Json => {
                        Ok(())
                    }
                }
            }
            Node::Zarr(w, z) => self.zarr_check(*w, z),
        }
    }

    pub(super) fn lookup_node(&self, parent: &Node, name: &str) -> Result<Node> {
        match parent {
            Node::FragmentsDir => {
                // By name, not by listing: `stat` of each of 100,000 fragments stays cheap.
                self.refresh_if_stale();
                self.array()
                    .fragment_named(name)
                    .filter(|f| names::encode(&f.name) == name)
                    .map(|f| Node::Fragment(f.id))
                    .ok_or_else(|| Error::NotFound(name.to_string()))
            }
            // Any timestamp opens by name, listed or not.
            Node::AtDir => self.lookup_at(name),
            // Without merging the state: its picture needs no merge, and shows even
            // where the state cannot be merged.
            Node::State(w) if name == PICTURE => Ok(Node::Picture(Some(*w))),
            Node::Zarr(w, z) => self.zarr_lookup(*w, z, name),
            // The other folders, by their listing (a file lists nothing: not found).
            dir @ (Node::Root
            | Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::SchemaFile(_)
            | Node::Fragment(_)
            | Node::State(_)
            | Node::FolderFile(..)
            | Node::Field(_)
            | Node::FieldFile(..)
            | Node::Enum(_)
            | Node::EnumFile(..)
            | Node::LabelsDir
            | Node::Label(_)
            | Node::Picture(_)) => self
                .list_nodes(dir)?
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, node)| node)
                .ok_or_else(|| Error::NotFound(name.to_string())),
        }
    }

    /// The entries of a folder, in display order.
    pub(super) fn list_nodes(&self, dir: &Node) -> Result<Vec<(String, Node)>> {
        let e = |name: &str, node| (name.to_string(), node);
        Ok(match dir {
            Node::Root => {
                let has_labels = !self.array().latest_schema().schema.labels.is_empty();
                vec![
                    e("array.json", Node::ArrayJson),
                    e(PICTURE, Node::Picture(None)),
                    e("metadata.json", Node::MetadataJson),
                    e("schema.json", Node::SchemaJson),
                    e("schemas", Node::SchemasDir),
                    e("fragments", Node::FragmentsDir),
                    e("latest", Node::State(None)),
                    e("at", Node::AtDir),
                ]
                .into_iter()
                .chain(has_labels.then(|| e("labels", Node::LabelsDir)))
                .chain(
                    self.has_zarr(None)
                        .then(|| e("zarr", Node::Zarr(None, ZNode::Root))),
                )
                .collect()
            }
            Node::LabelsDir => self
                .array()
                .latest_schema()
                .schema
                .labels
                .iter()
                .enumerate()
                .map(|(l, label)| {
                    let root = Inside {
                        key: l,
                        inner: ROOT,
                    };
                    (names::encode(&label.name), Node::Label(root))
                })
                .collect(),
            Node::SchemasDir => self
                .array()
                .schemas
                .iter()
                .map(|s| {
                    (
                        format!("{}.json", names::encode(&s.name)),
                        Node::SchemaFile(s.name.clone()),
                    )
                })
                .collect(),
            Node::FragmentsDir => {
                self.refresh_if_stale();
                self.array()
                    .fragments
                    .iter()
                    .map(|f| (names::encode(&f.name), Node::Fragment(f.id)))
                    .collect()
            }
            Node::AtDir => self
                .change_timestamps()
                .into_iter()
                .map(|t| (t.to_string(), Node::State(Some(t))))
                .collect(),
            Node::Fragment(f) => self.list_folder(Folder::Fragment(*f))?,
            Node::State(w) => self.list_folder(Folder::State(*w))?,
            Node::Field(of) => {
                let mut out: Vec<(String, Node)> = faces::present(self, *of)?
                    .into_iter()
                    .map(|(id, face)| e(face.name(), Node::FieldFile(*of, id)))
                    .collect();
                if self.field_enumeration_name(of)?.is_some() {
                    out.push(e("enumeration", Node::Enum(*of)));
                }
                out
            }
            Node::Enum(of) => {
                let (en, _) = self
                    .field_enumeration(of)?
                    .ok_or_else(|| Error::NotFound("enumeration".into()))?;
                let mut out = vec![e("values.bin", Node::EnumFile(*of, EnumFile::Values))];
                if en.is_var() {
                    out.push(e("offsets.bin", Node::EnumFile(*of, EnumFile::Offsets)));
                }
                out.push(e("values.txt", Node::EnumFile(*of, EnumFile::Text)));
                out.push(e("enumeration.json", Node::EnumFile(*of, EnumFile::Json)));
                out
            }
            Node::Zarr(w, z) => self.zarr_list(*w, z)?,
            Node::Label(_) => return Err(Error::NotDirectory("a dimension label's node".into())),
            Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemaFile(_)
            | Node::FolderFile(..)
            | Node::FieldFile(..)
            | Node::EnumFile(..)
            | Node::Picture(_) => return Err(Error::NotDirectory(self.describe(dir))),
        })
    }

    /// A fragment or state folder: the faces of the folder table it has, a folder per
    /// field, and (states at a timestamp) `zarr/`.
    /// The names of a folder's fields (dimensions, then attributes, as stored), unencoded.
    pub(super) fn field_names(&self, folder: Folder) -> Result<Vec<String>> {
        let names = |fields: &mut dyn Iterator<Item = &String>| fields.cloned().collect();
        Ok(match folder {
            Folder::Fragment(f) => names(&mut self.meta(f)?.1.fields.iter().map(|x| &x.name)),
            Folder::State(w) => names(&mut self.merged(w)?.fields.iter().map(|x| &x.name)),
        })
    }

    pub(super) fn list_folder(&self, folder: Folder) -> Result<Vec<(String, Node)>> {
        let mut out: Vec<(String, Node)> = faces::present(self, folder)?
            .into_iter()
            .map(|(id, face)| (face.name().to_string(), Node::FolderFile(folder, id)))
            .collect();
        if let Folder::State(w) = folder {
            out.push((PICTURE.to_string(), Node::Picture(Some(w))));
        }
        let fields = self.field_names(folder)?;
        for (i, name) in fields.iter().enumerate() {
            out.push((names::encode(name), Node::Field(FieldOf::new(folder, i))));
        }
        // `zarr/` of the latest state is at the root.
        if let Folder::State(w @ Some(_)) = folder {
            if self.has_zarr(w) {
                out.push(("zarr".to_string(), Node::Zarr(w, ZNode::Root)));
            }
        }
        Ok(out)
    }

    /// How a node is named in a message: its path in the tree where it has one.
    pub(super) fn describe(&self, node: &Node) -> String {
        match self.nodes.find(node) {
            Some(ino) => self.path_of(ino),
            None => "a file".to_string(),
        }
    }

    /// The path of `ino` from the root, for messages.
    pub(super) fn path_of(&self, mut ino: Ino) -> String {
        let mut parts = Vec::new();
        while ino != ROOT {
            let Ok(parent) = self.parent(ino) else { break };
            let name = self
                .list(parent)
                .ok()
                .and_then(|l| l.into_iter().find(|e| e.ino == ino))
                .map(|e| e.name);
            parts.push(name.unwrap_or_else(|| format!("#{ino}")));
            ino = parent;
        }
        parts.reverse();
        format!("/{}", parts.join("/"))
    }

    /// The number of sub-folders of a folder whose listing is cheap (the root, `labels/`,
    /// a field folder), so `stat` reports `nlink` = 2 + that; `None` where counting them
    /// would need fragment metadata or a merge (see [`Stat::nlink`]).
    pub(super) fn subfolders(&self, node: &Node) -> Result<Option<u32>> {
        Ok(match node {
            Node::Root | Node::LabelsDir | Node::Field(_) | Node::Enum(_) | Node::SchemasDir => {
                let dirs = self
                    .list_nodes(node)?
                    .iter()
                    .filter(|(_, n)| n.kind() == Kind::Dir)
                    .count();
                Some(u32::try_from(dirs).unwrap_or(u32::MAX - 2))
            }
            Node::FragmentsDir => {
                Some(u32::try_from(self.array().fragments.len()).unwrap_or(u32::MAX - 2))
            }
            Node::Fragment(_) | Node::AtDir | Node::State(_) | Node::Label(_) | Node::Zarr(..) => {
                None
            }
            Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemaFile(_)
            | Node::FolderFile(..)
            | Node::FieldFile(..)
            | Node::EnumFile(..)
            | Node::Picture(_) => None,
        })
    }
}
