//! Folder listings as the doors send them: every entry, page by page from one
//! [`Listing`], streamed as they are made.
//!
//! A listing is taken once; each page numbers its entries as it gets to them
//! ([`FileTree::listed`]) and reads their attributes (`stat`, which never renders), on
//! the blocking pool, one page at a time as the connection takes the bytes. So a
//! `fragments/` of 100,000 entries costs time linear in its entries and memory of one
//! page, and no entry is lost to the tree dropping idle numbers. The HTTP door's JSON
//! listing is here, its HTML page in [`super::page`]; WebDAV's multistatus uses the same
//! pages.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use super::sizing::Sizing;
use crate::error::Result;
use crate::view::{FileTree, Ino, Kind, Listing};

/// Entries per page: a page is one body chunk of some 100 KiB.
pub const PAGE: usize = 512;

/// One entry as a listing shows it: what `stat` says, without rendering anything.
pub struct Shown {
    pub name: String,
    pub ino: Ino,
    pub dir: bool,
    /// `None` for a folder, or a text file whose size shows once it was read (or a
    /// file whose attributes cannot be read).
    pub size: Option<u64>,
    pub mtime_ms: Option<u64>,
}

/// Entries `[from, from + count)` of `listing`, numbered and stat'ed now. An entry gone
/// since the listing (a vacuum) is left out; one whose attributes cannot be read is
/// shown without a size (hiding it would lie about the tree; reading it reports why).
pub fn page(tree: &dyn FileTree, listing: &Listing, from: usize, count: usize) -> Vec<Shown> {
    let end = from.saturating_add(count).min(listing.len());
    let mut out = Vec::with_capacity(end.saturating_sub(from));
    for i in from..end {
        let Ok(entry) = tree.listed(listing, i) else {
            continue;
        };
        let dir = entry.kind == Kind::Dir;
        let (size, mtime_ms) = match tree.stat(entry.ino) {
            Ok(stat) => (
                (!dir && stat.exact_size).then_some(stat.size),
                stat.mtime_ms,
            ),
            Err(e) if gone(&e) => continue,
            Err(_) => (None, None),
        };
        out.push(Shown {
            name: entry.name,
            ino: entry.ino,
            dir,
            size,
            mtime_ms,
        });
    }
    out
}

/// An error that means the file or folder is not there (any more).
pub fn gone(e: &crate::error::Error) -> bool {
    matches!(e.errno(), libc::ENOENT | libc::ENOTDIR)
}

/// Bytes of a listing made page by page.
pub type Pages = std::pin::Pin<Box<dyn futures::Stream<Item = io::Result<Bytes>> + Send>>;

/// `head`, then every page of `listing` made by `render` on the blocking pool (one page
/// in flight, made as the connection takes the last), then `tail`. With `sizing`, a
/// page's text files not sized yet are sized in the sizing pool first (each within its
/// deadline; one still unsized shows without a size), for doors whose clients trust a
/// listing's sizes (WebDAV).
pub fn stream(
    tree: Arc<dyn FileTree>,
    listing: Arc<Listing>,
    sizing: Option<Arc<Sizing>>,
    head: String,
    render: impl Fn(&dyn FileTree, &[Shown], usize) -> String + Send + Sync + 'static,
    tail: String,
) -> Pages {
    use futures::StreamExt;
    let render = Arc::new(render);
    // The folder's number stays in use while its pages are made (a tree that looks an
    // entry up again by name needs it).
    let holding = Holding::take(&tree, listing.dir());
    let pages = listing.len().div_ceil(PAGE);
    let body = futures::stream::iter(0..pages).then(move |p| {
        let (tree, listing, render) = (tree.clone(), listing.clone(), render.clone());
        let sizing = sizing.clone();
        let _holding = holding.clone();
        async move {
            let t = tree.clone();
            let shown = tokio::task::spawn_blocking(move || page(&*t, &listing, p * PAGE, PAGE))
                .await
                .map_err(io::Error::other)?;
            let shown = match sizing {
                Some(sizing) => sized(&sizing, shown).await,
                None => shown,
            };
            let made = tokio::task::spawn_blocking(move || render(&*tree, &shown, p * PAGE)).await;
            made.map(Bytes::from).map_err(io::Error::other)
        }
    });
    let head = futures::stream::once(async move { Ok(Bytes::from(head)) });
    let tail = futures::stream::once(async move { Ok(Bytes::from(tail)) });
    Box::pin(head.chain(body).chain(tail))
}

/// `shown` with the sizes of its text files, rendered in the sizing pool where they
/// are not known yet (all of the page's at once); one that could not be sized in time
/// stays without.
pub async fn sized(sizing: &Sizing, mut shown: Vec<Shown>) -> Vec<Shown> {
    let pending: Vec<usize> = (0..shown.len())
        .filter(|&i| !shown[i].dir && shown[i].size.is_none())
        .collect();
    if pending.is_empty() {
        return shown;
    }
    let sizes = futures::future::join_all(pending.iter().map(|&i| sizing.size(shown[i].ino))).await;
    for (i, size) in pending.into_iter().zip(sizes) {
        shown[i].size = size.ok();
    }
    shown
}

/// A folder's number held in use ([`FileTree::remember`]) while it lives.
struct Holding(Arc<dyn FileTree>, Ino);

impl Holding {
    fn take(tree: &Arc<dyn FileTree>, dir: Ino) -> Option<Arc<Holding>> {
        tree.remember(dir)
            .then(|| Arc::new(Holding(tree.clone(), dir)))
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.0.forget(self.1, 1);
    }
}

/// `{"path": "/latest/", "entries": [{"name", "type", "size", "mtime_ms"}, ...]}`, one
/// entry a line.
pub fn json(tree: Arc<dyn FileTree>, listing: Arc<Listing>, path: &str) -> Pages {
    let head = format!(
        "{{\n  \"path\": {},\n  \"entries\": [",
        serde_json::Value::from(path)
    );
    let render = |_: &dyn FileTree, shown: &[Shown], first: usize| {
        let mut out = String::new();
        for (i, e) in shown.iter().enumerate() {
            if first + i > 0 {
                out.push(',');
            }
            let entry = json!({
                "name": e.name,
                "type": if e.dir { "dir" } else { "file" },
                "size": e.size,
                "mtime_ms": e.mtime_ms,
            });
            out.push_str("\n    ");
            out.push_str(&entry.to_string());
        }
        out
    };
    stream(tree, listing, None, head, render, "\n  ]\n}\n".into())
}

/// The listing of folder `dir`, for a door to page through.
pub fn take(tree: &dyn FileTree, dir: Ino) -> Result<Arc<Listing>> {
    Ok(Arc::new(tree.listing(dir)?))
}
