//! Arrays with many fragments through a real mount: a folder is listed once per
//! `opendir`, however many requests the kernel makes to page through it (a listing per
//! request made `ls` of 100,000 fragments quadratic), and a rescan between two requests
//! shifts nothing: every entry is seen exactly once.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::mounting::*;
use common::watched::Watched;
use common::*;
use fragfs::storage::diskcache::CacheKey;
use fragfs::view::{ArrayTree, Entry, FileTree, Info, Ino, Lifetime, Listing, OpenGuard, Stat};

#[test]
fn a_folder_is_listed_once_per_opendir_and_a_rescan_midway_shifts_nothing() {
    if !fuse_available("readdir of many fragments") {
        return;
    }
    const N: u64 = 5_000;
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1_000);
    // No rescan by itself: the test makes the one it needs, between two requests.
    let tree = Arc::new(
        ArrayTree::open_path(&array, Default::default(), 16 << 20)
            .unwrap()
            .with_refresh_interval(std::time::Duration::MAX),
    );
    let fragments_ino = tree.resolve("fragments").unwrap();
    let counting = Watched::new(tree.clone());
    let mount = TreeMount::new(counting.clone());
    let dir = mount.path().join("fragments");

    let mut listing = std::fs::read_dir(&dir).unwrap();
    let mut seen: Vec<String> = listing
        .by_ref()
        .take(50)
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // A fragment that sorts first appears, and the tree rescans, while the listing is
    // half read: its next requests ask for offsets past what the kernel already has.
    many_fragments(&array, 1, 5);
    assert!(tree.refresh().unwrap(), "the rescan saw the new fragment");
    seen.extend(listing.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()));

    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for name in &seen {
        *counts.entry(name).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, &c)| c > 1).collect();
    assert!(twice.is_empty(), "seen more than once: {twice:?}");
    for t in 1_000..1_000 + N {
        let name = format!("__{t}_{t}_{t:032x}_22");
        assert!(counts.contains_key(name.as_str()), "{name} never seen");
    }
    assert!(seen.len() as u64 >= N);
    // Paging through 5,000 entries took the kernel many requests; the tree listed the
    // folder once for them.
    let lists = counting.lists_of(fragments_ino);
    assert_eq!(lists, 1, "listings of fragments/ for one opendir");

    // A new opendir lists again, and sees the new fragment.
    let again: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(again.len() as u64, N + 1);
    assert!(again.contains(&format!("__5_5_{:032x}_22", 5)));
    assert_eq!(counting.lists_of(fragments_ino), 2);
}

/// A daemon whose descriptor limit is 128 serves files of 300 fragments held open at
/// once (each open pins every file of its fragment, which took one descriptor per file
/// and ran out at a few dozen fragments): no EMFILE, every byte right.
#[test]
fn files_open_in_many_fragments_stay_within_the_descriptor_limit() {
    if !fuse_available("descriptor limit") {
        return;
    }
    const N: u64 = 300;
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1);
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = tmp.path().join("fragfs.log");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 128 && exec "$0" mount "$1" "$2" --log-file "$3""#)
        .arg(env!("CARGO_BIN_EXE_fragfs"))
        .arg(&array)
        .arg(&mnt)
        .arg(&log)
        .status()
        .unwrap();
    assert!(status.success());
    let _unmount = UnmountOnDrop(&mnt);
    assert!(is_mounted(&mnt));

    let fragments = mnt.join("fragments");
    let mut names: Vec<String> = std::fs::read_dir(&fragments)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len() as u64, N);
    // Every fragment is a copy of one: the same field, the same bytes.
    let field = std::fs::read_dir(fragments.join(&names[0]))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("values.bin").exists())
        .unwrap();
    let field = field.file_name().unwrap().to_owned();
    let want = std::fs::read(fragments.join(&names[0]).join(&field).join("values.bin")).unwrap();
    assert!(!want.is_empty());
    let open: Vec<std::fs::File> = names
        .iter()
        .map(|n| {
            std::fs::File::open(fragments.join(n).join(&field).join("values.bin"))
                .unwrap_or_else(|e| panic!("{n}: {e}"))
        })
        .collect();
    for (mut f, n) in open.into_iter().zip(&names) {
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut got).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(got == want, "{n}: other bytes");
    }
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!logged.contains("Too many open files"), "{logged}");
}

/// The kernel's FORGETs reach the node table: a walk of 20,000 distinct `at/<T>` paths
/// and of every fragment's folder, once the kernel has dropped its dentries, leaves the
/// tree with its idle limit of numbers, not one per path ever looked up (they were all
/// kept before). And `ls -l` of a folder listing more entries than that limit sees every
/// entry with its attributes (numbers the listing handed out went idle and were dropped
/// before `readdirplus` reached them: they are looked up again).
#[test]
fn forgotten_paths_leave_the_node_table_bounded() {
    if !fuse_available("FORGET") {
        return;
    }
    if unsafe_geteuid() != 0 {
        skip("FORGET: dropping the kernel's dentries (drop_caches) needs root");
        return;
    }
    const N: u64 = 3_000;
    const IDLE: usize = 1_000;
    let tmp = scratch_dir();
    let array = tmp.path().join("many");
    many_fragments(&array, N, 1);
    let tree = Arc::new(
        ArrayTree::open_path(&array, Default::default(), 16 << 20)
            .unwrap()
            .with_idle_limit(IDLE),
    );
    let mount = TreeMount::new(tree.clone());
    let root = mount.path();

    // `ls -l fragments/`: 3,000 entries, each with its attributes (readdirplus).
    let listed: Vec<(String, std::fs::Metadata)> = std::fs::read_dir(root.join("fragments"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed.len() as u64, N);
    assert!(listed.iter().all(|(_, m)| m.is_dir()));
    // Into every fragment, and 20,000 distinct timestamps.
    for (name, _) in &listed {
        let folder = root.join("fragments").join(name);
        assert!(std::fs::metadata(folder.join("footer.json")).unwrap().len() > 0);
    }
    for t in 1..=20_000u64 {
        let state = root.join("at").join(t.to_string());
        assert!(std::fs::metadata(&state).unwrap().is_dir(), "at/{t}");
    }
    let before = tree.nodes_in_use();
    assert!(
        before > 20_000,
        "the kernel holds what it looked up: {before}"
    );

    // The kernel drops its unused dentries and inodes, and FORGETs them to the daemon
    // (queued: they arrive as the daemon reads requests, so poll until they did).
    std::fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
    let bound = IDLE + 100;
    let mut now = tree.nodes_in_use();
    for _ in 0..600 {
        if now <= bound {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
        now = tree.nodes_in_use();
    }
    assert!(
        now <= bound,
        "{now} numbers in use after the kernel forgot {before}: at most {bound} expected"
    );
    // What is looked up again works, with new numbers or old.
    assert!(std::fs::metadata(root.join("at/17")).unwrap().is_dir());
    assert_eq!(
        std::fs::read_dir(root.join("fragments")).unwrap().count() as u64,
        N
    );
}

/// What a mount asked of the tree it serves, counted: the tree ([`ArrayTree`]) answers
/// every call, so the mount behaves as with the tree itself.
struct Counting {
    tree: Arc<ArrayTree>,
    /// `list` calls (the mount's `opendir`).
    lists: AtomicU64,
    /// Entries that `list` and `listing` handed out, summed over calls.
    entries: AtomicU64,
    /// `listed` calls (an entry of a listing numbered).
    listed: AtomicU64,
    lookups: AtomicU64,
    stats: AtomicU64,
}

/// What [`Counting`] counted since it was last taken.
#[derive(Debug, Clone, Copy)]
struct Counts {
    lists: u64,
    entries: u64,
    listed: u64,
    lookups: u64,
    stats: u64,
}

impl Counting {
    fn new(tree: Arc<ArrayTree>) -> Arc<Counting> {
        Arc::new(Counting {
            tree,
            lists: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            listed: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            stats: AtomicU64::new(0),
        })
    }

    /// The counts so far, which start again from 0.
    fn take(&self) -> Counts {
        let take = |c: &AtomicU64| c.swap(0, Ordering::SeqCst);
        Counts {
            lists: take(&self.lists),
            entries: take(&self.entries),
            listed: take(&self.listed),
            lookups: take(&self.lookups),
            stats: take(&self.stats),
        }
    }
}

impl FileTree for Counting {
    fn list(&self, dir: Ino) -> fragfs::Result<Vec<Entry>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let listed = self.tree.list(dir)?;
        self.entries
            .fetch_add(listed.len() as u64, Ordering::SeqCst);
        Ok(listed)
    }
    fn lookup(&self, parent: Ino, name: &str) -> fragfs::Result<Entry> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.tree.lookup(parent, name)
    }
    fn stat(&self, ino: Ino) -> fragfs::Result<Stat> {
        self.stats.fetch_add(1, Ordering::SeqCst);
        self.tree.stat(ino)
    }
    fn size(&self, ino: Ino) -> fragfs::Result<u64> {
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
    fn content_type(&self, ino: Ino, name: &str) -> &'static str {
        self.tree.content_type(ino, name)
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
    fn read_ahead(&self, ino: Ino, offset: u64, len: u64) -> fragfs::Result<()> {
        self.tree.read_ahead(ino, offset, len)
    }
    fn cache_key(&self, ino: Ino) -> Option<CacheKey> {
        self.tree.cache_key(ino)
    }
    fn next_cache_key(&self, ino: Ino) -> Option<CacheKey> {
        self.tree.next_cache_key(ino)
    }
    fn cache_fragments(&self) -> Vec<(String, HashSet<String>)> {
        self.tree.cache_fragments()
    }
    fn cached_file(&self, ino: Ino) -> Option<(std::fs::File, String)> {
        self.tree.cached_file(ino)
    }
    fn read_at(&self, ino: Ino, offset: u64, len: u64) -> fragfs::Result<Vec<u8>> {
        self.tree.read_at(ino, offset, len)
    }
    fn listing(&self, dir: Ino) -> fragfs::Result<Listing> {
        let listing = self.tree.listing(dir)?;
        self.entries
            .fetch_add(listing.len() as u64, Ordering::SeqCst);
        Ok(listing)
    }
    fn listed(&self, listing: &Listing, i: usize) -> fragfs::Result<Entry> {
        self.listed.fetch_add(1, Ordering::SeqCst);
        self.tree.listed(listing, i)
    }
    fn in_use(&self, ino: Ino) -> bool {
        self.tree.in_use(ino)
    }
    fn resolve(&self, path: &str) -> fragfs::Result<Ino> {
        self.tree.resolve(path)
    }
}

/// Runs `sh -c script` (given `dir`), checked to print `entries`.
fn run_listing(script: &str, dir: &std::path::Path, entries: u64) {
    let out = run_ok(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(dir),
    );
    assert_eq!(out.trim().parse::<u64>().unwrap(), entries, "{script}");
}

/// 100,000 fragments through a real mount: `ls fragments | wc -l`, `ls -l fragments/`
/// and a rescan of the array folder do no more work per entry than a small constant
/// allows, as at 10,000, and a listing with a rescan in the middle sees every entry
/// exactly once.
///
/// Work is counted, not timed (a timed bound failed on a busy machine): the mount
/// serves the tree through [`Counting`], and each `ls` may build its folder's listing
/// once (one `list`, at most 2 entries built per entry shown: a listing per kernel
/// request made `ls` quadratic, 0.19 s at 10,000 and unfinished after 11 minutes at
/// 100,000, thousands of entries built per entry shown there), and ask at most 3
/// lookups and stats in all per entry shown (`ls -l` gets attributes with
/// `readdirplus`: a stat per entry, and a lookup of those whose numbers went idle). A
/// rescan that finds nothing new may compare at most 2 fragment keys per fragment
/// matching what it found to what it had ([`fragfs::array::Array::rescan_comparisons`];
/// a search of the fragment list for each was quadratic, 30 s at 100,000). Speed itself
/// is the benchmarks' to measure.
#[test]
fn a_hundred_thousand_fragments_list_in_linear_time_each_once() {
    if !fuse_available("100,000 fragments") {
        return;
    }
    const SMALL: u64 = 10_000;
    const LARGE: u64 = 100_000;
    // 770,000 folder entries: made in memory where there is room, ten times faster
    // than on a disk.
    let tmp = scratch_dir();
    let arrays = [SMALL, LARGE].map(|n| {
        let array = tmp.path().join(format!("many-{n}"));
        many_fragments(&array, n, 1_000_000);
        let tree = Arc::new(
            ArrayTree::open_path(&array, Default::default(), 16 << 20)
                .unwrap()
                .with_refresh_interval(std::time::Duration::MAX),
        );
        let counting = Counting::new(tree.clone());
        let mount = TreeMount::new(counting.clone());
        (array, tree, counting, mount, n)
    });
    let count = r#"ls "$0" | wc -l"#;
    // `ls -l` prints a "total" line first.
    let long = r#"ls -l "$0" | tail -n +2 | wc -l"#;
    for (_, tree, counting, mount, n) in &arrays {
        let n = *n;
        let dir = mount.path().join("fragments");
        for (what, script) in [("ls | wc -l", count), ("ls -l", long)] {
            counting.take();
            run_listing(script, &dir, n);
            let c = counting.take();
            eprintln!("{what} of {n} entries: {c:?}");
            assert_eq!(c.lists, 1, "{what} of {n}: folders listed ({c:?})");
            assert!(
                c.entries <= 2 * n,
                "{what} of {n}: {} listing entries built for {n} shown, more than 2 per \
                 entry ({c:?})",
                c.entries
            );
            assert!(
                c.listed <= 2 * n,
                "{what} of {n}: {} listing entries numbered for {n} shown, more than 2 per \
                 entry ({c:?})",
                c.listed
            );
            // A stat per entry (`readdirplus`), and a lookup again of each whose number
            // went idle and was dropped before `readdirplus` reached it (the tree keeps
            // 65,536 idle: 34,464 of 100,000 at the first `ls`).
            assert!(
                c.lookups + c.stats <= 3 * n,
                "{what} of {n}: {} lookups and {} stats for {n} entries shown, more than 3 \
                 per entry ({c:?})",
                c.lookups,
                c.stats
            );
        }
        let before = tree.array().rescan_comparisons();
        assert!(!tree.refresh().unwrap(), "nothing changed");
        let compared = tree.array().rescan_comparisons() - before;
        eprintln!("a rescan of {n} fragments: {compared} fragment keys compared");
        // Each fragment found is looked up once: a count under that is a counter that
        // stopped counting.
        assert!(
            (n..=2 * n).contains(&compared),
            "a rescan of {n} fragments finding nothing new compared {compared} fragment keys \
             matching them to those it had: at least 1 and at most 2 per fragment expected"
        );
    }

    // A rescan half way through a listing of 100,000 (a fragment that sorts first
    // appears): every entry once, none skipped.
    let (array, tree, _, mount, _) = &arrays[1];
    let mut listing = std::fs::read_dir(mount.path().join("fragments")).unwrap();
    let mut seen: Vec<String> = listing
        .by_ref()
        .take(50_000)
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    many_fragments(array, 1, 5);
    assert!(tree.refresh().unwrap());
    seen.extend(listing.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()));
    let unique: std::collections::HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "an entry seen twice");
    for t in 1_000_000..1_000_000 + LARGE {
        let name = format!("__{t}_{t}_{t:032x}_22");
        assert!(unique.contains(&name), "{name} never seen");
    }
}
