//! The tree of a TileDB group: `group.json` (its members: name, URI as stored, relative
//! or not, type, where it lives, why one is not shown; and the group's metadata),
//! `metadata.json`, and one folder per member that lives inside the group folder, holding
//! that member's whole tree (an array's, or a nested group's), opened on first visit.
//! TileDB-SOMA experiments are groups of groups of arrays.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::array::group::{Group, Member};
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::format::group::{sniff_object_type, ObjectType};
use crate::storage::Store;

use super::cache::{Caches, Rendered};
use super::info::{GroupInfo, Info, MemberInfo};
use super::nodes::{Ino, NodeTable, ROOT};
use super::subtree::{self, Inside, Subtrees};
use super::tiledb::json;
use super::{names, ArrayTree, Entry, FileTree, Kind, Lifetime, Listing, OpenGuard, Stat};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    Root,
    File(GroupFile),
    /// A node of member `m`'s tree (its root: the member's folder).
    Member(Inside<usize>),
}

/// Where a node lies inside a member's tree, if it does.
fn member_inside(node: &Node) -> Option<Inside<usize>> {
    match node {
        Node::Member(inside) => Some(*inside),
        Node::Root | Node::File(_) => None,
    }
}

/// The group's own files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum GroupFile {
    GroupJson,
    MetadataJson,
}

impl GroupFile {
    fn name(self) -> &'static str {
        match self {
            GroupFile::GroupJson => "group.json",
            GroupFile::MetadataJson => "metadata.json",
        }
    }
}

/// A member and what the group folder says of it.
struct Shown {
    member: Member,
    /// What its folder holds, when it is inside the group and is an array or a group.
    kind: Option<ObjectType>,
    /// Why it is not shown as a folder.
    reason: Option<String>,
}

pub struct GroupTree {
    store: Arc<dyn Store>,
    options: OpenOptions,
    caches: Caches,
    group: Group,
    members: Vec<Shown>,
    nodes: NodeTable<Node>,
    /// Member trees opened so far.
    children: Subtrees<usize>,
    owner: u64,
}

impl GroupTree {
    /// The group at the root of `store`, its members reading through `caches`.
    pub fn open(store: Arc<dyn Store>, options: OpenOptions, caches: Caches) -> Result<GroupTree> {
        let group = Group::open(&*store, options.key)?;
        let mut members = Vec::with_capacity(group.members.len());
        for m in &group.members {
            let (kind, reason) = match &m.inside {
                None => (None, Some("lives outside the group folder".to_string())),
                Some(path) => {
                    let listing = store.list(path)?;
                    let entries = listing.iter().map(|e| (e.name.as_str(), e.is_folder()));
                    match sniff_object_type(entries) {
                        ObjectType::Invalid if listing.is_empty() => {
                            (None, Some(format!("missing: {path} does not exist")))
                        }
                        ObjectType::Invalid => (
                            None,
                            Some(format!("{path} is neither a TileDB array nor a group")),
                        ),
                        t => (Some(t), None),
                    }
                }
            };
            members.push(Shown {
                member: m.clone(),
                kind,
                reason,
            });
        }
        Ok(GroupTree {
            store,
            options,
            caches,
            group,
            members,
            nodes: NodeTable::new(Node::Root),
            children: Subtrees::default(),
            owner: Caches::new_owner(),
        })
    }

    fn node(&self, ino: Ino) -> Result<Node> {
        self.nodes
            .node(ino)
            .ok_or_else(|| Error::NotFound(format!("inode {ino}")))
    }

    /// Member `m`'s tree, opened on first use.
    fn child(&self, m: usize) -> Result<Arc<dyn FileTree>> {
        self.children.tree(m, || {
            let shown = self
                .members
                .get(m)
                .ok_or_else(|| Error::NotFound(format!("member #{m}")))?;
            let (Some(path), Some(kind)) = (&shown.member.inside, shown.kind) else {
                return Err(Error::NotFound(shown.member.name.clone()));
            };
            let store = self.store.sub(path)?;
            let tree: Arc<dyn FileTree> = match kind {
                ObjectType::Group => Arc::new(GroupTree::open(
                    store,
                    self.options.clone(),
                    self.caches.clone(),
                )?),
                ObjectType::Array | ObjectType::Invalid => Arc::new(ArrayTree::with_caches(
                    Array::open(store, self.options.clone())?,
                    self.caches.clone(),
                )),
            };
            Ok(tree)
        })
    }

    /// Runs `f` on the member tree and inner number of a member's node.
    fn in_member<T>(
        &self,
        node: &Node,
        f: impl FnOnce(&dyn FileTree, Ino) -> Result<T>,
    ) -> Option<Result<T>> {
        let Node::Member(inside) = node else {
            return None;
        };
        Some(self.child(inside.key).and_then(|t| f(&*t, inside.inner)))
    }

    /// Renumbers an entry of member `m`'s tree for this tree.
    fn member_entry(&self, m: usize, e: Entry) -> Entry {
        subtree::outer_entry(&self.nodes, Node::Member, m, e)
    }

    /// `group.json` or `metadata.json`, rendered once and kept (in the view cache, or on
    /// disk when larger: see [`Caches::rendered`]).
    fn rendered(&self, ino: Ino, file: GroupFile) -> Result<Rendered> {
        self.caches.rendered(self.owner, ino, 0, || {
            let value = match file {
                GroupFile::GroupJson => self.group_json(),
                GroupFile::MetadataJson => json::metadata(&self.group.metadata),
            };
            Ok(json::to_bytes(&value))
        })
    }

    fn group_json(&self) -> Value {
        let members: Vec<Value> = self
            .members
            .iter()
            .map(|s| {
                let m = &s.member;
                json!({
                    "name": m.name,
                    "uri": m.uri,
                    "relative": m.relative,
                    "type": type_name(m.object_type),
                    "path_in_group": m.inside,
                    "shown_as": s.reason.is_none().then(|| names::encode(&m.name)),
                    "not_shown_because": s.reason,
                })
            })
            .collect();
        json!({
            "location": self.store.location(),
            "members": members,
            "metadata": json::metadata(&self.group.metadata),
        })
    }
}

fn type_name(t: ObjectType) -> &'static str {
    match t {
        ObjectType::Array => "array",
        ObjectType::Group => "group",
        ObjectType::Invalid => "unknown",
    }
}

impl FileTree for GroupTree {
    fn listing(&self, dir: Ino) -> Result<Listing> {
        match self.node(dir)? {
            Node::Member(inside) => {
                let tree = self.child(inside.key)?;
                subtree::outer_listing(dir, inside.key, &*tree, inside.inner)
            }
            // The group's own folder: its files and members, numbered as it lists.
            Node::Root | Node::File(_) => Ok(Listing::of_entries(dir, self.list(dir)?)),
        }
    }

    fn listed(&self, listing: &Listing, i: usize) -> Result<Entry> {
        if listing.given(i).is_some() {
            // The group's own folder (numbered as listed).
            return listing.given_entry(i, |ino| self.in_use(ino), |d, n| self.lookup(d, n));
        }
        subtree::outer_listed(
            listing,
            i,
            |m| self.child(m),
            |m, e| self.member_entry(m, e),
        )
    }

    fn list(&self, dir: Ino) -> Result<Vec<Entry>> {
        let node = self.node(dir)?;
        let listed = match node {
            Node::Root => None,
            Node::File(file) => return Err(Error::NotDirectory(file.name().to_string())),
            Node::Member(inside) => Some((inside.key, self.child(inside.key)?.list(inside.inner)?)),
        };
        if let Some((m, entries)) = listed {
            return Ok(entries
                .into_iter()
                .map(|e| self.member_entry(m, e))
                .collect());
        }
        let mut out: Vec<Entry> = [GroupFile::GroupJson, GroupFile::MetadataJson]
            .into_iter()
            .map(|file| Entry {
                name: file.name().to_string(),
                ino: self.nodes.ino(&Node::File(file)),
                kind: Kind::File,
            })
            .collect();
        for (m, s) in self.members.iter().enumerate() {
            if s.reason.is_none() {
                out.push(Entry {
                    name: names::encode(&s.member.name),
                    ino: self.nodes.ino(&Node::Member(Inside {
                        key: m,
                        inner: ROOT,
                    })),
                    kind: Kind::Dir,
                });
            }
        }
        Ok(out)
    }

    fn lookup(&self, parent: Ino, name: &str) -> Result<Entry> {
        let node = self.node(parent)?;
        if let Node::Member(inside) = node {
            let e = self.child(inside.key)?.lookup(inside.inner, name)?;
            return Ok(self.member_entry(inside.key, e));
        }
        self.list(parent)?
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    fn stat(&self, ino: Ino) -> Result<Stat> {
        let shown = self.members.iter().filter(|s| s.reason.is_none()).count();
        Ok(match self.node(ino)? {
            Node::Root => Stat {
                kind: Kind::Dir,
                size: 0,
                nlink: u32::try_from(shown)
                    .unwrap_or(u32::MAX - 2)
                    .saturating_add(2),
                mtime_ms: None,
                exact_size: true,
            },
            Node::File(file) => Stat {
                kind: Kind::File,
                size: self.rendered(ino, file)?.len("a JSON file")?,
                nlink: 1,
                mtime_ms: None,
                exact_size: true,
            },
            Node::Member(inside) => self.child(inside.key)?.stat(inside.inner)?,
        })
    }

    fn size(&self, ino: Ino) -> Result<u64> {
        let node = self.node(ino)?;
        match self.in_member(&node, |t, i| t.size(i)) {
            Some(size) => size,
            None => Ok(self.stat(ino)?.size),
        }
    }

    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(ino)?;
        if let Some(read) = self.in_member(&node, |t, i| t.read_into(i, offset, len, out)) {
            return read;
        }
        match node {
            Node::File(file) => {
                self.rendered(ino, file)?
                    .read_into("a JSON file", offset, len, out)
            }
            Node::Root | Node::Member(_) => Err(Error::IsDirectory("the group".into())),
        }
    }

    fn read_ahead(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        let node = self.node(ino)?;
        self.in_member(&node, |t, i| t.read_ahead(i, offset, len))
            .unwrap_or(Ok(()))
    }

    fn open(&self, ino: Ino) -> Result<Option<OpenGuard>> {
        let node = self.node(ino)?;
        self.in_member(&node, |t, i| t.open(i)).unwrap_or(Ok(None))
    }

    fn sized_on_open(&self, ino: Ino) -> bool {
        let Ok(node) = self.node(ino) else {
            return false;
        };
        self.in_member(&node, |t, i| Ok(t.sized_on_open(i)))
            .and_then(|r| r.ok())
            .unwrap_or(false)
    }

    fn parent(&self, ino: Ino) -> Result<Ino> {
        Ok(match self.node(ino)? {
            Node::Member(inside) if inside.inner != ROOT => {
                let p = self.child(inside.key)?.parent(inside.inner)?;
                self.nodes.ino(&Node::Member(Inside {
                    key: inside.key,
                    inner: p,
                }))
            }
            Node::Root | Node::File(_) | Node::Member(_) => ROOT,
        })
    }

    fn remember(&self, ino: Ino) -> bool {
        subtree::remember(&self.nodes, ino, member_inside, |m| self.child(m))
    }

    fn forget(&self, ino: Ino, n: u64) {
        subtree::forget(&self.nodes, ino, n, member_inside, |m| self.child(m))
    }

    fn lifetime(&self, ino: Ino) -> Lifetime {
        let Ok(node) = self.node(ino) else {
            return Lifetime::Changing;
        };
        match self.in_member(&node, |t, i| Ok(t.lifetime(i))) {
            Some(Ok(lifetime)) => lifetime,
            Some(Err(_)) | None => Lifetime::Changing,
        }
    }

    fn version(&self, ino: Ino) -> Option<u64> {
        let node = self.node(ino).ok()?;
        self.in_member(&node, |t, i| Ok(t.version(i)))?
            .ok()
            .flatten()
    }

    fn content_type(&self, ino: Ino, name: &str) -> &'static str {
        let node = self.node(ino).ok();
        match node.and_then(|n| self.in_member(&n, |t, i| Ok(t.content_type(i, name)))) {
            Some(Ok(kind)) => kind,
            Some(Err(_)) | None => crate::view::mime::of_name(name),
        }
    }

    fn generation(&self) -> u64 {
        0
    }

    fn source(&self) -> String {
        self.store.location()
    }

    fn entry_count(&self) -> u64 {
        self.members.len() as u64
    }

    fn info(&self) -> Result<Info> {
        Ok(Info::Group(GroupInfo {
            location: self.store.location(),
            members: self
                .members
                .iter()
                .map(|s| MemberInfo {
                    name: names::encode(&s.member.name),
                    kind: type_name(s.member.object_type),
                    uri: s.member.uri.clone(),
                    relative: s.member.relative,
                    not_shown_because: s.reason.clone(),
                })
                .collect(),
            metadata: super::info::metadata_lines(&self.group.metadata),
        }))
    }
}
