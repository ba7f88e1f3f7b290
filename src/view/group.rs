//! The tree of a TileDB group: `group.json` (its members: name, URI as stored, relative
//! or not, type, where it lives, why one is not shown; and the group's metadata),
//! `metadata.json`, and one folder per member that lives inside the group folder, holding
//! that member's whole tree (an array's, or a nested group's), opened on first visit.
//! TileDB-SOMA experiments are groups of groups of arrays.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::array::group::{Group, Member};
use crate::array::{Array, OpenOptions};
use crate::error::{Error, Result};
use crate::format::group::{sniff_object_type, ObjectType};
use crate::read::{CacheKey, Cached, ReadEngine, ViewItem};
use crate::storage::Store;

use super::info::{GroupInfo, Info, MemberInfo};
use super::nodes::{Ino, NodeTable, ROOT};
use super::tiledb::json;
use super::{names, ArrayTree, Entry, FileTree, Kind, Lifetime, OpenGuard, Stat};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    Root,
    GroupJson,
    MetadataJson,
    /// The root of member `m`'s tree.
    Member(usize),
    /// Node `ino` of member `m`'s tree.
    Inner(usize, Ino),
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
    engine: Arc<ReadEngine>,
    group: Group,
    members: Vec<Shown>,
    nodes: NodeTable<Node>,
    /// Member trees opened so far.
    children: Mutex<HashMap<usize, Arc<dyn FileTree>>>,
    owner: u64,
}

/// A node inside a member: the member's index, its tree and the node's number there.
type InMember = (usize, Arc<dyn FileTree>, Ino);

impl GroupTree {
    /// The group at the root of `store`, its members reading through `engine`.
    pub fn open(
        store: Arc<dyn Store>,
        options: OpenOptions,
        engine: Arc<ReadEngine>,
    ) -> Result<GroupTree> {
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
            engine,
            group,
            members,
            nodes: NodeTable::new(Node::Root),
            children: Mutex::new(HashMap::new()),
            owner: ReadEngine::new_owner(),
        })
    }

    fn node(&self, ino: Ino) -> Result<Node> {
        self.nodes
            .node(ino)
            .ok_or_else(|| Error::NotFound(format!("inode {ino}")))
    }

    /// Member `m`'s tree, opened on first use.
    fn child(&self, m: usize) -> Result<Arc<dyn FileTree>> {
        if let Some(tree) = self.lock().get(&m) {
            return Ok(tree.clone());
        }
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
                self.engine.clone(),
            )?),
            _ => Arc::new(ArrayTree::with_engine(
                Array::open(store, self.options.clone())?,
                self.engine.clone(),
            )),
        };
        self.lock().insert(m, tree.clone());
        Ok(tree)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Arc<dyn FileTree>>> {
        self.children.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The outer number of member `m`'s node `inner`.
    fn outer(&self, m: usize, inner: Ino) -> Ino {
        if inner == ROOT {
            self.nodes.ino(&Node::Member(m))
        } else {
            self.nodes.ino(&Node::Inner(m, inner))
        }
    }

    /// The member tree and inner number a node stands for, if it is a member's.
    fn inner(&self, node: &Node) -> Result<Option<InMember>> {
        Ok(match *node {
            Node::Member(m) => Some((m, self.child(m)?, ROOT)),
            Node::Inner(m, i) => Some((m, self.child(m)?, i)),
            _ => None,
        })
    }

    fn render(&self, node: &Node) -> Result<Vec<u8>> {
        let value = match node {
            Node::GroupJson => self.group_json(),
            Node::MetadataJson => json::metadata(&self.group.metadata),
            other => return Err(Error::IsDirectory(format!("{other:?}"))),
        };
        Ok(json::to_bytes(&value))
    }

    fn rendered(&self, ino: Ino, node: &Node) -> Result<Arc<Cached>> {
        self.engine.cache().get_or_load(
            CacheKey::View {
                owner: self.owner,
                file: ino,
                item: ViewItem::Rendered(0),
            },
            || self.render(node).map(Cached::Bytes),
        )
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
    fn list(&self, dir: Ino) -> Result<Vec<Entry>> {
        let node = self.node(dir)?;
        if let Some((m, tree, i)) = self.inner(&node)? {
            return Ok(tree
                .list(i)?
                .into_iter()
                .map(|e| Entry {
                    ino: self.outer(m, e.ino),
                    ..e
                })
                .collect());
        }
        if node != Node::Root {
            return Err(Error::NotDirectory(format!("{node:?}")));
        }
        let file = |name: &str, node: Node| Entry {
            name: name.to_string(),
            ino: self.nodes.ino(&node),
            kind: Kind::File,
        };
        let mut out = vec![
            file("group.json", Node::GroupJson),
            file("metadata.json", Node::MetadataJson),
        ];
        for (m, s) in self.members.iter().enumerate() {
            if s.reason.is_none() {
                out.push(Entry {
                    name: names::encode(&s.member.name),
                    ino: self.nodes.ino(&Node::Member(m)),
                    kind: Kind::Dir,
                });
            }
        }
        Ok(out)
    }

    fn lookup(&self, parent: Ino, name: &str) -> Result<Entry> {
        let node = self.node(parent)?;
        if let Some((m, tree, i)) = self.inner(&node)? {
            let e = tree.lookup(i, name)?;
            return Ok(Entry {
                ino: self.outer(m, e.ino),
                ..e
            });
        }
        self.list(parent)?
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    fn stat(&self, ino: Ino) -> Result<Stat> {
        let node = self.node(ino)?;
        if let Some((_, tree, i)) = self.inner(&node)? {
            return tree.stat(i);
        }
        Ok(match node {
            Node::Root => Stat {
                kind: Kind::Dir,
                size: 0,
                nlink: 1,
                mtime_ms: None,
                exact_size: true,
            },
            file => Stat {
                kind: Kind::File,
                size: self.rendered(ino, &file)?.bytes("a JSON file")?.len() as u64,
                nlink: 1,
                mtime_ms: None,
                exact_size: true,
            },
        })
    }

    fn size(&self, ino: Ino) -> Result<u64> {
        let node = self.node(ino)?;
        match self.inner(&node)? {
            Some((_, tree, i)) => tree.size(i),
            None => Ok(self.stat(ino)?.size),
        }
    }

    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let node = self.node(ino)?;
        if let Some((_, tree, i)) = self.inner(&node)? {
            return tree.read_into(i, offset, len, out);
        }
        if node == Node::Root {
            return Err(Error::IsDirectory("the group".into()));
        }
        let rendered = self.rendered(ino, &node)?;
        let bytes = rendered.bytes("a JSON file")?;
        let start = offset.min(bytes.len() as u64) as usize;
        let end = offset.saturating_add(len).min(bytes.len() as u64) as usize;
        out.extend_from_slice(&bytes[start..end]);
        Ok(())
    }

    fn read_ahead(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        match self.inner(&self.node(ino)?)? {
            Some((_, tree, i)) => tree.read_ahead(i, offset, len),
            None => Ok(()),
        }
    }

    fn open(&self, ino: Ino) -> Result<Option<OpenGuard>> {
        match self.inner(&self.node(ino)?)? {
            Some((_, tree, i)) => tree.open(i),
            None => Ok(None),
        }
    }

    fn parent(&self, ino: Ino) -> Result<Ino> {
        Ok(match self.node(ino)? {
            Node::Inner(m, i) => {
                let p = self.child(m)?.parent(i)?;
                self.outer(m, p)
            }
            _ => ROOT,
        })
    }

    fn lifetime(&self, ino: Ino) -> Lifetime {
        let Ok(node) = self.node(ino) else {
            return Lifetime::Changing;
        };
        match self.inner(&node) {
            Ok(Some((_, tree, i))) => tree.lifetime(i),
            _ => Lifetime::Changing,
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
