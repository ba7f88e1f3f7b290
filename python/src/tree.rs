//! `fragfs.Tree`: one array (or group, Filo fragment, anything `fragfs cat` opens), local
//! or on S3, as the tree of files a mount shows, read in-process.
//!
//! Every call into the tree runs with the GIL released (`Python::detach`), so Python
//! threads read in parallel as the mount's threads do. A file is held while it is read
//! or sized (`Held`: its node kept, and the bytes of a fragment TileDB vacuums
//! meanwhile), as the HTTP door holds the file it serves.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fragfs::view::held::Held;
use fragfs::view::{open_source, FileTree, Ino, Kind, DEFAULT_CACHE_SIZE};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::errors::to_py;
use crate::options::{chunk_options, disk_cache, open_options, S3Args};

#[pyclass(frozen, module = "fragfs")]
pub struct Tree {
    tree: Arc<dyn FileTree>,
    uri: String,
}

/// One file or folder, as `ls` and `info` give it (`size` is `None` in a listing for a
/// file whose size is known only once it is built: `info` builds it).
struct Node {
    name: String,
    size: Option<u64>,
    kind: Kind,
}

impl Node {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", &self.name)?;
        d.set_item("size", self.size)?;
        d.set_item(
            "type",
            match self.kind {
                Kind::Dir => "directory",
                Kind::File => "file",
            },
        )?;
        Ok(d)
    }
}

#[pymethods]
impl Tree {
    /// Opens `uri`: a local folder or file, or `s3://bucket/prefix`.
    #[new]
    #[pyo3(signature = (
        uri,
        *,
        endpoint_url = None,
        region = None,
        profile = None,
        no_sign_request = false,
        virtual_hosted = None,
        access_key_id = None,
        secret_access_key = None,
        retry_timeout = None,
        cache_size = DEFAULT_CACHE_SIZE,
        encryption_key = None,
        cache_dir = None,
        cache_dir_size = None,
        cache_decrypted = false,
        filo_type = None,
        filo_version = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        uri: String,
        endpoint_url: Option<String>,
        region: Option<String>,
        profile: Option<String>,
        no_sign_request: bool,
        virtual_hosted: Option<bool>,
        access_key_id: Option<String>,
        secret_access_key: Option<String>,
        retry_timeout: Option<f64>,
        cache_size: u64,
        encryption_key: Option<String>,
        cache_dir: Option<PathBuf>,
        cache_dir_size: Option<u64>,
        cache_decrypted: bool,
        filo_type: Option<String>,
        filo_version: Option<String>,
    ) -> PyResult<Tree> {
        let s3 = S3Args {
            endpoint_url,
            region,
            profile,
            no_sign_request,
            virtual_hosted,
            access_key_id,
            secret_access_key,
            retry_timeout,
        }
        .options()?;
        let options = open_options(encryption_key.as_deref())?;
        let chunk = chunk_options(filo_type.as_deref(), filo_version.as_deref())?;
        let path = uri.clone();
        let tree = py.detach(move || {
            let disk = disk_cache(cache_dir, cache_dir_size, cache_decrypted)?;
            open_source(Path::new(&path), &s3, options, chunk, cache_size, disk).map_err(to_py)
        })?;
        Ok(Tree { tree, uri })
    }

    /// The entries of the folder `path` ("" is the root), each a dict with `name` (its
    /// path in the tree), `size` and `type` ("file" or "directory"); a file's own entry
    /// when `path` is a file.
    #[pyo3(signature = (path = ""))]
    fn ls<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let path = clean(path);
        let nodes = py.detach(|| list(&self.tree, &path)).map_err(to_py)?;
        nodes.iter().map(|n| n.to_dict(py)).collect()
    }

    /// The file or folder at `path`: its exact size, a text file's too (built to learn it,
    /// once).
    fn info<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
        let path = clean(path);
        let node = py.detach(|| info(&self.tree, &path)).map_err(to_py)?;
        node.to_dict(py)
    }

    /// The bytes of the file at `path`, `[start:end]` as a Python slice (negative counts
    /// from the end; `None` is the start or the end), as `fragfs cat` would print them.
    #[pyo3(signature = (path, start = None, end = None))]
    fn cat<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        start: Option<i64>,
        end: Option<i64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let path = clean(path);
        let bytes = py
            .detach(|| cat(&self.tree, &path, start, end))
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// What the tree shows (a folder path, an object-store URL).
    #[getter]
    fn source(&self) -> String {
        self.tree.source()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "fragfs.Tree({})",
            PyString::new(py, &self.uri).repr()?
        ))
    }
}

/// `path` without leading, trailing or doubled `/`.
fn clean(path: &str) -> String {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// `name` inside the folder `dir` (a clean path, "" the root).
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A listing entry: sizes as `stat` knows them, never building a file.
fn listed(tree: &Arc<dyn FileTree>, ino: Ino, name: String) -> fragfs::Result<Node> {
    let stat = tree.stat(ino)?;
    Ok(Node {
        name,
        size: match stat.kind {
            Kind::Dir => Some(0),
            Kind::File => stat.exact_size.then_some(stat.size),
        },
        kind: stat.kind,
    })
}

fn list(tree: &Arc<dyn FileTree>, path: &str) -> fragfs::Result<Vec<Node>> {
    let dir = tree.resolve(path)?;
    if tree.stat(dir)?.kind == Kind::File {
        return Ok(vec![listed(tree, dir, path.to_string())?]);
    }
    let mut nodes = Vec::new();
    for e in tree.list(dir)? {
        let name = join(path, &e.name);
        // A number handed out long ago may have been dropped (a tree keeps a bounded
        // number of idle nodes): the entry is found again by name, as `fragfs ls` does.
        let node = match listed(tree, e.ino, name.clone()) {
            Err(fragfs::Error::NotFound(_)) => listed(tree, tree.lookup(dir, &e.name)?.ino, name)?,
            node => node?,
        };
        nodes.push(node);
    }
    Ok(nodes)
}

fn info(tree: &Arc<dyn FileTree>, path: &str) -> fragfs::Result<Node> {
    let ino = tree.resolve(path)?;
    let stat = tree.stat(ino)?;
    let size = match stat.kind {
        Kind::Dir => 0,
        Kind::File => size(tree, ino)?,
    };
    Ok(Node {
        name: path.to_string(),
        size: Some(size),
        kind: stat.kind,
    })
}

/// The exact size of file `ino`: what `stat` says, else built to learn it (a text file,
/// a table file), as the HTTP door sizes such a file.
fn size(tree: &Arc<dyn FileTree>, ino: Ino) -> fragfs::Result<u64> {
    let stat = tree.stat(ino)?;
    if stat.exact_size {
        return Ok(stat.size);
    }
    let held = Held::take(tree, ino)?;
    held.tree.size(held.ino)
}

fn cat(
    tree: &Arc<dyn FileTree>,
    path: &str,
    start: Option<i64>,
    end: Option<i64>,
) -> fragfs::Result<Vec<u8>> {
    let ino = tree.resolve(path)?;
    if tree.stat(ino)?.kind == Kind::Dir {
        return Err(fragfs::Error::IsDirectory(path.to_string()));
    }
    let held = Held::take(tree, ino)?;
    let size = size(tree, ino)?;
    let (from, to) = slice(size, start, end);
    let mut out = Vec::with_capacity((to - from) as usize);
    // A read may give fewer bytes than asked before the end: read on until the range is
    // whole, or the file ends.
    while (out.len() as u64) < to - from {
        let at = from + out.len() as u64;
        let before = out.len();
        held.tree.read_into(held.ino, at, to - at, &mut out)?;
        if out.len() == before {
            break;
        }
    }
    Ok(out)
}

/// `[start:end]` of `size` bytes as Python slices it: negative counts from the end, both
/// clamped to the file, an empty range where `end` is before `start`.
fn slice(size: u64, start: Option<i64>, end: Option<i64>) -> (u64, u64) {
    let at = |i: Option<i64>, default: u64| match i {
        None => default,
        Some(i) if i < 0 => size.saturating_sub(i.unsigned_abs()),
        Some(i) => (i as u64).min(size),
    };
    let from = at(start, 0);
    let to = at(end, size).max(from);
    (from, to)
}
