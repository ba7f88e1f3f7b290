//! A tree that watches what a mount or a door asks of the tree it wraps.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use fragfs::view::{Entry, FileTree, Info, Ino, Lifetime, Listing, OpenGuard, Stat};

/// A tree that counts what is asked of it: lists and listings taken per folder, entries
/// numbered; and whose text files can be held back from rendering (`close_gate`), to show
/// what else is served meanwhile.
pub struct Watched {
    tree: Arc<dyn FileTree>,
    lists: Mutex<BTreeMap<Ino, u64>>,
    listings: Mutex<BTreeMap<Ino, u64>>,
    pub numbered: AtomicU64,
    /// While false, `size` of a file whose size is not known waits.
    gate: (Mutex<bool>, Condvar),
    /// Renders held at the gate now.
    pub waiting: AtomicU64,
}

impl Watched {
    pub fn new(tree: Arc<dyn FileTree>) -> Arc<Watched> {
        Arc::new(Watched {
            tree,
            lists: Mutex::default(),
            listings: Mutex::default(),
            numbered: AtomicU64::new(0),
            gate: (Mutex::new(true), Condvar::new()),
            waiting: AtomicU64::new(0),
        })
    }

    /// `list` calls of folder `dir` (the mount's `opendir`).
    pub fn lists_of(&self, dir: Ino) -> u64 {
        self.lists.lock().unwrap().get(&dir).copied().unwrap_or(0)
    }

    /// `listing` calls of folder `dir` (the doors' listings).
    pub fn listings_of(&self, dir: Ino) -> u64 {
        self.listings
            .lock()
            .unwrap()
            .get(&dir)
            .copied()
            .unwrap_or(0)
    }

    pub fn reset(&self) {
        self.lists.lock().unwrap().clear();
        self.listings.lock().unwrap().clear();
        self.numbered.store(0, Ordering::Relaxed);
    }

    /// From now on, `size` of a file not sized yet waits for [`Watched::open_gate`].
    pub fn close_gate(&self) {
        *self.gate.0.lock().unwrap() = false;
    }

    pub fn open_gate(&self) {
        *self.gate.0.lock().unwrap() = true;
        self.gate.1.notify_all();
    }
}

impl FileTree for Watched {
    fn list(&self, dir: Ino) -> fragfs::Result<Vec<Entry>> {
        *self.lists.lock().unwrap().entry(dir).or_default() += 1;
        self.tree.list(dir)
    }
    fn listing(&self, dir: Ino) -> fragfs::Result<Listing> {
        *self.listings.lock().unwrap().entry(dir).or_default() += 1;
        self.tree.listing(dir)
    }
    fn listed(&self, listing: &Listing, i: usize) -> fragfs::Result<Entry> {
        self.numbered.fetch_add(1, Ordering::Relaxed);
        self.tree.listed(listing, i)
    }
    fn lookup(&self, parent: Ino, name: &str) -> fragfs::Result<Entry> {
        self.tree.lookup(parent, name)
    }
    fn stat(&self, ino: Ino) -> fragfs::Result<Stat> {
        self.tree.stat(ino)
    }
    fn size(&self, ino: Ino) -> fragfs::Result<u64> {
        if !self.tree.stat(ino)?.exact_size {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let mut open = self.gate.0.lock().unwrap();
            while !*open {
                open = self.gate.1.wait(open).unwrap();
            }
            drop(open);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        self.tree.size(ino)
    }
    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> fragfs::Result<()> {
        self.tree.read_into(ino, offset, len, out)
    }
    fn parent(&self, ino: Ino) -> fragfs::Result<Ino> {
        self.tree.parent(ino)
    }
    fn lifetime(&self, ino: Ino) -> Lifetime {
        self.tree.lifetime(ino)
    }
    fn generation(&self) -> u64 {
        self.tree.generation()
    }
    fn source(&self) -> String {
        self.tree.source()
    }
    fn entry_count(&self) -> u64 {
        self.tree.entry_count()
    }
    fn info(&self) -> fragfs::Result<Info> {
        self.tree.info()
    }
    fn open(&self, ino: Ino) -> fragfs::Result<Option<OpenGuard>> {
        self.tree.open(ino)
    }
    fn sized_on_open(&self, ino: Ino) -> bool {
        self.tree.sized_on_open(ino)
    }
    fn remember(&self, ino: Ino) -> bool {
        self.tree.remember(ino)
    }
    fn forget(&self, ino: Ino, n: u64) {
        self.tree.forget(ino, n)
    }
    fn version(&self, ino: Ino) -> Option<u64> {
        self.tree.version(ino)
    }
}
