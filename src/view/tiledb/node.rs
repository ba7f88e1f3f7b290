//! The nodes of an array's tree: what each inode number names (a folder, a face's file
//! in a fragment, state or field folder, a file of `enumeration/`, a node of `zarr/` or of
//! a dimension label's tree), small, hashable and comparable, so the node table can number
//! them.

use crate::array::fragment::FragmentId;
use crate::view::entry::Kind;
use crate::view::subtree::Inside;

use super::faces::FaceId;
use super::zarr::ZNode;

/// A timestamp: `None` is now (`latest/`).
pub(super) type When = Option<u64>;

/// A state's folder: `latest` or `at/<T>`.
pub(super) fn state_dir(w: When) -> String {
    match w {
        None => "latest".to_string(),
        Some(t) => format!("at/{t}"),
    }
}

/// A folder that holds whole-folder files and field folders: a fragment's, or a merged
/// state's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Folder {
    Fragment(FragmentId),
    /// `latest/` (`None`) or `at/<T>/`.
    State(When),
}

impl Folder {
    pub(super) fn fragment(self) -> Option<FragmentId> {
        match self {
            Folder::Fragment(f) => Some(f),
            Folder::State(_) => None,
        }
    }

    pub(super) fn state(self) -> Option<When> {
        match self {
            Folder::Fragment(_) => None,
            Folder::State(w) => Some(w),
        }
    }
}

/// A field folder: field `index` of a fragment's fields, or of a merged state's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct FieldOf {
    pub(super) folder: Folder,
    pub(super) index: usize,
}

impl FieldOf {
    pub(super) fn new(folder: Folder, index: usize) -> FieldOf {
        FieldOf { folder, index }
    }
}

/// A node of the tree. Fragments are named by their [`FragmentId`], fields by their
/// index among the fragment's (or the state's) fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Node {
    Root,
    ArrayJson,
    /// `metadata.json`: the array's metadata.
    MetadataJson,
    SchemaJson,
    SchemasDir,
    /// `schemas/<name>.json`, by schema file name.
    SchemaFile(String),
    FragmentsDir,
    /// A fragment's folder.
    Fragment(FragmentId),
    /// `at/`: the array's past, by timestamp.
    AtDir,
    /// `latest/` (`None`) or `at/<T>/`: the array as TileDB reads it.
    State(When),
    /// A file of a fragment or state folder: a face of the folder table.
    FolderFile(Folder, FaceId),
    /// A field's folder.
    Field(FieldOf),
    /// A file of a field folder: a face of the field table.
    FieldFile(FieldOf, FaceId),
    /// `enumeration/` of an enumerated attribute's folder.
    Enum(FieldOf),
    EnumFile(FieldOf, EnumFile),
    /// `labels/`: the dimension labels, each an array of its own.
    LabelsDir,
    /// A node of a dimension label's tree (its root: the label's folder in `labels/`).
    Label(Inside<usize>),
    /// A node of `zarr/` (latest, at the root) or `at/<T>/zarr/`.
    Zarr(When, ZNode),
    /// `fragments.svg`, at the root (`None`) or in a state folder.
    Picture(Option<When>),
}

/// The files of `enumeration/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum EnumFile {
    Values,
    Offsets,
    Text,
    Json,
}

/// What answers for a node: every question about a node (its kind, size, bytes,
/// read-ahead, lifetime, cache key, media type) is a match over these few groups, so a
/// new kind of node is sorted into one of them here, once, and every match that must
/// decide for it fails to compile until it does.
#[derive(Debug, Clone, Copy)]
pub(super) enum Served<'a> {
    /// A folder of the array's own tree (the root, `schemas/`, `fragments/`, a fragment,
    /// `at/`, a state, a field, `enumeration/`, `labels/`): listed, never read.
    Folder,
    /// An array-level file rendered whole (`array.json`, `metadata.json`, `schema.json`,
    /// `schemas/<name>.json`): it changes with a rescan.
    ArrayFile(ArrayFile<'a>),
    /// A file of `enumeration/`, rendered whole.
    EnumFile(FieldOf, EnumFile),
    /// A face of a fragment or state folder's table.
    FolderFace(Folder, FaceId),
    /// A face of a field folder's table.
    FieldFace(FieldOf, FaceId),
    /// A node of `zarr/`, folder or file: the Zarr store answers.
    Zarr(When, &'a ZNode),
    /// A node of a dimension label's tree: the label's tree answers.
    Label(Inside<usize>),
}

/// An array-level file rendered whole.
#[derive(Debug, Clone, Copy)]
pub(super) enum ArrayFile<'a> {
    /// `array.json`.
    Array,
    /// `metadata.json`.
    Metadata,
    /// `schema.json`: the newest schema.
    Schema,
    /// `schemas/<name>.json`, by schema file name.
    SchemaNamed(&'a str),
    /// `fragments.svg` as of a time: every fragment of the array at once (those written
    /// after it too), so it changes with a rescan as the array-level files do.
    Picture(When),
}

impl Node {
    /// The group that answers for the node (see [`Served`]).
    pub(super) fn served(&self) -> Served<'_> {
        match self {
            Node::Root
            | Node::SchemasDir
            | Node::FragmentsDir
            | Node::Fragment(_)
            | Node::AtDir
            | Node::State(_)
            | Node::Field(_)
            | Node::Enum(_)
            | Node::LabelsDir => Served::Folder,
            Node::ArrayJson => Served::ArrayFile(ArrayFile::Array),
            Node::MetadataJson => Served::ArrayFile(ArrayFile::Metadata),
            Node::SchemaJson => Served::ArrayFile(ArrayFile::Schema),
            Node::SchemaFile(name) => Served::ArrayFile(ArrayFile::SchemaNamed(name)),
            // The root's picture is now's, as `latest/`'s.
            Node::Picture(w) => Served::ArrayFile(ArrayFile::Picture(w.flatten())),
            Node::EnumFile(of, file) => Served::EnumFile(*of, *file),
            Node::FolderFile(folder, id) => Served::FolderFace(*folder, *id),
            Node::FieldFile(of, id) => Served::FieldFace(*of, *id),
            Node::Zarr(w, z) => Served::Zarr(*w, z),
            Node::Label(inside) => Served::Label(*inside),
        }
    }

    /// Whether the node is a folder. (A label's nodes other than its root take their
    /// kind from the label's tree, which is asked instead.)
    pub(super) fn kind(&self) -> Kind {
        match self.served() {
            Served::Folder | Served::Label(_) => Kind::Dir,
            Served::Zarr(_, z) if z.is_dir() => Kind::Dir,
            Served::ArrayFile(_)
            | Served::EnumFile(..)
            | Served::FolderFace(..)
            | Served::FieldFace(..)
            | Served::Zarr(..) => Kind::File,
        }
    }

    /// The fragment or state folder the node is in (or is), if any: what fixes its bytes
    /// (a fragment's never change; a state's change with the array). `zarr/` shows a
    /// state; the array-level nodes and the labels' are in none.
    pub(super) fn folder(&self) -> Option<Folder> {
        match self {
            Node::Fragment(f) => Some(Folder::Fragment(*f)),
            Node::State(w) | Node::Zarr(w, _) => Some(Folder::State(*w)),
            Node::FolderFile(folder, _) => Some(*folder),
            Node::Field(of) | Node::FieldFile(of, _) | Node::Enum(of) | Node::EnumFile(of, _) => {
                Some(of.folder)
            }
            Node::Root
            | Node::ArrayJson
            | Node::MetadataJson
            | Node::SchemaJson
            | Node::SchemasDir
            | Node::SchemaFile(_)
            | Node::FragmentsDir
            | Node::AtDir
            | Node::LabelsDir
            | Node::Label(_)
            // In a state folder, but of the whole array (see `ArrayFile::Picture`).
            | Node::Picture(_) => None,
        }
    }

    /// The merged state a node shows (`latest/`, `at/<T>/` and their `zarr/`).
    pub(super) fn state(&self) -> Option<When> {
        self.folder().and_then(Folder::state)
    }

    /// The fragment a node is inside of (its folder included).
    pub(super) fn fragment(&self) -> Option<FragmentId> {
        self.folder().and_then(Folder::fragment)
    }
}

/// Where a node lies inside a dimension label's tree, if it does.
pub(super) fn label_inside(node: &Node) -> Option<Inside<usize>> {
    match node.served() {
        Served::Label(inside) => Some(inside),
        Served::Folder
        | Served::ArrayFile(_)
        | Served::EnumFile(..)
        | Served::FolderFace(..)
        | Served::FieldFace(..)
        | Served::Zarr(..) => None,
    }
}
