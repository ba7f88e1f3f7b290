//! Eviction, off the read path: a write that finds the cache full is refused room and
//! wakes this thread ([`Folder::evict_later`]), which recounts the folder and removes the
//! least recently used entries until it holds 90% of the bound. No read ever scans the
//! folder or removes a file, and a read that finds the cache full is never made to wait
//! for room: its bytes are served and not kept.
//!
//! A pass first counts the folder while no write is under way (see [`super::usage`]):
//! the count is then exact, which sets right what crashes and refused writes left in
//! it. The scan that finds the oldest entries runs without the folder's lock (it may
//! take a while, and entries go on being made and used meanwhile); each entry is then
//! removed under the lock, and only if it was not used or made again since the scan:
//! an entry being made (under the lock as well) is never removed half made, and one
//! half removed is never opened ([`super::folder::Folder::entry`] opens under the lock too), so
//! no `.data` is left without its `.idx` or the reverse. An entry without an index when
//! the lock is held is what a crash left (nothing is being made then): it goes first.
//!
//! The thread starts at the first pass asked for, not when the cache opens: a mount
//! opens its cache before it forks into the background, and a thread started then
//! would not exist in the daemon (and forking beside a running thread is not sound).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::entry;
use super::folder::Folder;

/// One entry as a scan found it.
pub(super) struct Scanned {
    /// Without the `.data`/`.idx` suffix.
    pub base: PathBuf,
    /// Every file of the entry (`.idx`, `.data`, an index being made aside).
    pub files: Vec<PathBuf>,
    /// Bytes on disk of those files.
    pub bytes: u64,
    /// Its last use: its index's modification time in ns (`None`: no index).
    pub used_at: Option<u64>,
}

/// The modification time of a file in ns since the epoch, not following links; `None`
/// unless it is a regular file.
fn mtime_ns(meta: &std::fs::Metadata) -> Option<u64> {
    meta.is_file()
        .then(|| meta.mtime() as u64 * 1_000_000_000 + meta.mtime_nsec() as u64)
}

/// Every entry under `root` with its size on disk and last use. Links are never
/// followed (a link is counted as itself, and removed with its entry).
pub(super) fn scan(root: &Path) -> Vec<Scanned> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: HashMap<PathBuf, Scanned> = HashMap::new();
        for item in read.flatten() {
            let path = item.path();
            // Of the directory entry itself: a link is not followed.
            let Ok(meta) = item.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            let name = item.file_name().to_string_lossy().into_owned();
            let Some((stem, suffix)) = name.split_once('.') else {
                continue;
            };
            let base = dir.join(stem);
            let s = entries.entry(base.clone()).or_insert_with(|| Scanned {
                base,
                files: Vec::new(),
                bytes: 0,
                used_at: None,
            });
            s.bytes += meta.blocks() * 512;
            if suffix == "idx" {
                s.used_at = mtime_ns(&meta);
            }
            s.files.push(path);
        }
        out.extend(entries.into_values());
    }
    out
}

/// Whether the entry the scan saw as `s` may be removed now (the lock held): it was not
/// used since (its index has the same time) nor made again; or it has no index, which
/// under the lock means it is what a crash or an interrupted removal left.
fn unused_since(s: &Scanned) -> bool {
    match std::fs::symlink_metadata(entry::index_path(&s.base))
        .ok()
        .and_then(|m| mtime_ns(&m))
    {
        None => true,
        Some(now) => s.used_at == Some(now),
    }
}

impl Folder {
    /// Asks for a pass that makes room for `wanted` bytes, starting the thread on first
    /// need. Never waits.
    pub(super) fn evict_later(&self, wanted: u64) {
        self.evictions.kick(wanted);
        let mut thread = self.evictions.thread();
        if !thread.tried && !self.evictions.stopping() {
            thread.tried = true;
            if let Some(folder) = self.me.upgrade() {
                thread.handle = start(folder);
            }
        }
    }

    /// One eviction pass: recount, then remove the least recently used entries until
    /// the folder holds 90% of the bound, or less if a write refused room since the
    /// last pass needs more than the other 10% (`wanted` bytes): it fits next time.
    fn evict(&self, wanted: u64) {
        let counting = match self.usage.counting() {
            Ok(c) => c,
            Err(e) => {
                log::warn!("disk cache: counting {}: {e}", self.root.display());
                return;
            }
        };
        let mut all = scan(&self.root);
        let total: u64 = all.iter().map(|s| s.bytes).sum();
        if let Err(e) = self.lock.hold(|| self.usage.write(total)) {
            log::warn!("disk cache: counting {}: {e}", self.root.display());
            return;
        }
        drop(counting);
        let target = (self.budget - self.budget / 10).min(self.budget.saturating_sub(wanted));
        if total <= target {
            return;
        }
        all.sort_by_key(|s| s.used_at.unwrap_or(0));
        let mut removed = 0;
        for s in &all {
            if self.evictions.stopping() {
                break;
            }
            let step = self.lock.hold(|| {
                // The count as every daemon left it: others may have removed or added.
                if self.usage.read().is_none_or(|used| used <= target) {
                    return Ok(None);
                }
                if !unused_since(s) {
                    return Ok(Some(false));
                }
                self.remove_entry(&s.base, &s.files)?;
                Ok(Some(true))
            });
            match step {
                Ok(None) => break,
                Ok(Some(gone)) => removed += u64::from(gone),
                Err(e) => {
                    log::warn!("disk cache: evicting: {e}");
                    break;
                }
            }
        }
        if removed > 0 {
            log::info!(
                "disk cache: evicted {removed} least recently used files (bound {} MiB)",
                self.budget >> 20
            );
        }
    }
}

/// Starts the eviction thread of `folder`; it ends when told to
/// ([`Evictions::stop_and_join`], when the cache is dropped). Without a thread (none
/// could be made) the cache fills to its bound and then keeps nothing more.
fn start(folder: Arc<Folder>) -> Option<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("fragfs-evict".into())
        .spawn(move || {
            while let Some(wanted) = folder.evictions.next() {
                folder.evict(wanted);
                folder.evictions.finished();
            }
        })
        .map_err(|e| log::warn!("disk cache: no eviction thread: {e}"))
        .ok()
}
