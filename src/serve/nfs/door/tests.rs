//! The NFS programs called directly (no socket): handles, stale handles after the tree
//! dropped a number, refused writes, and calls that do not decode.

use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::view::{ArrayTree, FileTree};
use crate::wire::rpc::{answer, Accept, Call, Programs};
use crate::wire::xdr::{Reader, Writer};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiledb")
        .join(name)
}

/// A door over `dense_basic` whose tree keeps `idle` idle numbers and which holds
/// `held` handles.
fn door(idle: usize, held: usize) -> (Arc<dyn FileTree>, NfsDoor) {
    let tree: Arc<dyn FileTree> = Arc::new(
        ArrayTree::open_path(&fixture("dense_basic"), Default::default(), 16 << 20)
            .unwrap()
            .with_idle_limit(idle),
    );
    (tree.clone(), NfsDoor::new(tree, 2049, held))
}

/// Calls NFS procedure `proc_` with `args`; the results' bytes.
fn nfs(door: &NfsDoor, proc_: u32, args: &Writer) -> (Accept, Vec<u8>) {
    let call = Call {
        xid: 1,
        prog: NFS_PROGRAM,
        vers: 3,
        proc_,
    };
    let mut out = Writer::default();
    let accept = door.call(&call, &mut Reader::new(&args.buf), &mut out);
    (accept, out.buf)
}

fn root_handle(door: &NfsDoor) -> Vec<u8> {
    door.export("/").unwrap().to_vec()
}

/// LOOKUP `name` in the folder of handle `dir`: the status and the handle.
fn lookup(door: &NfsDoor, dir: &[u8], name: &str) -> (u32, Option<Vec<u8>>) {
    let mut a = Writer::default();
    a.opaque(dir);
    a.opaque(name.as_bytes());
    let (accept, res) = nfs(door, 3, &a);
    assert_eq!(accept, Accept::Success);
    let mut r = Reader::new(&res);
    let status = r.u32().unwrap();
    let fh = (status == OK).then(|| r.opaque(64).unwrap().to_vec());
    (status, fh)
}

fn lookup_path(door: &NfsDoor, path: &str) -> Vec<u8> {
    let mut fh = root_handle(door);
    for name in path.split('/') {
        let (status, h) = lookup(door, &fh, name);
        assert_eq!(status, OK, "{path}: {name}");
        fh = h.unwrap();
    }
    fh
}

/// READ of a whole file, one RTMAX call at a time: the status and its bytes.
fn read(door: &NfsDoor, fh: &[u8]) -> (u32, Vec<u8>) {
    let mut data = Vec::new();
    loop {
        let mut a = Writer::default();
        a.opaque(fh);
        a.u64(data.len() as u64);
        a.u32(RTMAX);
        let (accept, res) = nfs(door, 6, &a);
        assert_eq!(accept, Accept::Success);
        let mut r = Reader::new(&res);
        let status = r.u32().unwrap();
        if status != OK {
            return (status, Vec::new());
        }
        if r.bool().unwrap() {
            r.fixed(84).unwrap();
        }
        let count = r.u32().unwrap();
        let eof = r.bool().unwrap();
        let part = r.opaque(RTMAX as usize).unwrap();
        assert_eq!(count as usize, part.len());
        data.extend_from_slice(part);
        if eof {
            return (status, data);
        }
        assert!(!part.is_empty(), "no bytes and no end");
    }
}

/// Every file path of the tree (the `at/` states left out).
fn files(tree: &dyn FileTree) -> Vec<String> {
    let mut out = Vec::new();
    // By path: a small tree may have dropped a listed folder's number by the time
    // it is listed.
    let mut stack = vec![String::new()];
    while let Some(path) = stack.pop() {
        let dir = tree.resolve(&path).unwrap();
        for e in tree.list(dir).unwrap() {
            let p = if path.is_empty() {
                e.name.clone()
            } else {
                format!("{path}/{}", e.name)
            };
            if p == "at" {
                continue;
            }
            if e.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn handles_read_the_files_they_name() {
    let (tree, door) = door(crate::view::nodes::IDLE_LIMIT, handles::HELD);
    let paths = files(&*tree);
    assert!(paths.len() > 10, "{paths:?}");
    for path in &paths {
        let fh = lookup_path(&door, path);
        let want = tree
            .read_at(tree.resolve(path).unwrap(), 0, 64 << 20)
            .unwrap();
        assert_eq!(read(&door, &fh), (OK, want), "{path}");
    }
}

/// With 2 handles held and 4 idle numbers kept, walking every file drops the first
/// ones' numbers: their handles answer STALE, never another file's bytes, and a new
/// lookup of the same path reads the file again.
#[test]
fn a_handle_whose_number_was_dropped_is_stale_not_another_file() {
    let (tree, door) = door(4, 2);
    let paths = files(&*tree);
    let handles: Vec<(String, Vec<u8>)> = paths
        .iter()
        .map(|p| (p.clone(), lookup_path(&door, p)))
        .collect();
    assert!(door.handles().held() <= 2, "held {}", door.handles().held());
    let mut stale = 0;
    for (path, fh) in &handles {
        let want = tree
            .read_at(tree.resolve(path).unwrap(), 0, 64 << 20)
            .unwrap();
        match read(&door, fh) {
            (OK, got) => assert_eq!(got, want, "{path}: another file's bytes"),
            (STALE, _) => {
                stale += 1;
                let again = lookup_path(&door, path);
                assert_eq!(read(&door, &again), (OK, want), "{path} looked up again");
            }
            (s, _) => panic!("{path}: status {s}"),
        }
    }
    assert!(stale > 0, "no handle went stale among {}", handles.len());
    println!("{stale} of {} handles stale", handles.len());
}

#[test]
fn handles_of_another_run_or_malformed_are_refused() {
    let (_, door) = door(16, 16);
    let (_, other) = door_pair();
    let fh = lookup_path(&other, "latest");
    let mut a = Writer::default();
    a.opaque(&fh);
    let (_, res) = nfs(&door, 1, &a);
    assert_eq!(
        Reader::new(&res).u32(),
        Ok(STALE),
        "another server's handle"
    );
    for bad in [&b""[..], &b"short"[..], &[0u8; 16][..], &[1u8; 17][..]] {
        let mut a = Writer::default();
        a.opaque(bad);
        let (_, res) = nfs(&door, 1, &a);
        let s = Reader::new(&res).u32().unwrap();
        assert!(s == BADHANDLE || s == STALE, "{bad:?}: {s}");
    }
}

fn door_pair() -> (Arc<dyn FileTree>, NfsDoor) {
    door(16, 16)
}

#[test]
fn every_write_is_refused_as_a_read_only_file_system() {
    let (_, door) = door(16, 16);
    let root = root_handle(&door);
    for proc_ in [2, 7, 8, 9, 10, 11, 12, 13, 14, 15, 21] {
        let mut a = Writer::default();
        a.opaque(&root);
        a.opaque(b"new");
        a.fixed(&[0; 64]);
        let (accept, res) = nfs(&door, proc_, &a);
        assert_eq!(accept, Accept::Success, "procedure {proc_}");
        assert_eq!(Reader::new(&res).u32(), Ok(ROFS), "procedure {proc_}");
    }
    // And ACCESS grants reading only.
    let mut a = Writer::default();
    a.opaque(&root);
    a.u32(0x3f);
    let (_, res) = nfs(&door, 4, &a);
    let mut r = Reader::new(&res);
    assert_eq!(r.u32(), Ok(OK));
    assert_eq!(r.bool(), Ok(true));
    r.fixed(84).unwrap();
    assert_eq!(r.u32(), Ok(ACCESS_READ | ACCESS_LOOKUP | ACCESS_EXECUTE));
}

#[test]
fn calls_that_do_not_decode_are_answered_not_fatal() {
    let (_, door) = door(16, 16);
    // Truncated arguments: GARBAGE_ARGS.
    let (accept, _) = nfs(&door, 6, &Writer::default());
    assert_eq!(accept, Accept::GarbageArgs);
    // A procedure past the last: PROC_UNAVAIL.
    let (accept, _) = nfs(&door, 99, &Writer::default());
    assert_eq!(accept, Accept::ProcUnavail);
    // Whole records: a record too short for a call header is no call; another
    // program or version is answered as such.
    assert_eq!(answer(&door, &[0, 0, 0]), None);
    let mut call = Writer::default();
    for v in [7, 0, 2, 100_003, 4, 0, 0, 0, 0, 0] {
        call.u32(v);
    }
    let reply = answer(&door, &call.buf).unwrap();
    let mut r = Reader::new(&reply);
    let words: Vec<u32> = (0..8).map(|_| r.u32().unwrap()).collect();
    // xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, PROG_MISMATCH 3..3.
    assert_eq!(words, [7, 1, 0, 0, 0, 2, 3, 3]);
    call.buf[12..16].copy_from_slice(&4242u32.to_be_bytes());
    let reply = answer(&door, &call.buf).unwrap();
    assert_eq!(&reply[20..24], &1u32.to_be_bytes(), "PROG_UNAVAIL");
}

#[test]
fn mount_exports_folders_only() {
    let (_, door) = door(16, 16);
    assert!(door.export("/").is_ok());
    assert!(door.export("/latest").is_ok());
    assert_eq!(door.export("/nothing"), Err(NOENT));
    assert_eq!(door.export("/../etc"), Err(ACCES));
    assert_eq!(door.export("/array.json"), Err(NOTDIR));
}

/// A tree that counts the listings asked of it.
struct CountingTree {
    inner: Arc<dyn FileTree>,
    lists: std::sync::atomic::AtomicUsize,
}

impl FileTree for CountingTree {
    fn list(&self, dir: Ino) -> crate::Result<Vec<crate::view::Entry>> {
        self.lists
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.list(dir)
    }
    fn lookup(&self, parent: Ino, name: &str) -> crate::Result<crate::view::Entry> {
        self.inner.lookup(parent, name)
    }
    fn stat(&self, ino: Ino) -> crate::Result<crate::view::Stat> {
        self.inner.stat(ino)
    }
    fn size(&self, ino: Ino) -> crate::Result<u64> {
        self.inner.size(ino)
    }
    fn read_into(&self, ino: Ino, offset: u64, len: u64, out: &mut Vec<u8>) -> crate::Result<()> {
        self.inner.read_into(ino, offset, len, out)
    }
    fn parent(&self, ino: Ino) -> crate::Result<Ino> {
        self.inner.parent(ino)
    }
    fn lifetime(&self, ino: Ino) -> crate::view::Lifetime {
        self.inner.lifetime(ino)
    }
    fn generation(&self) -> u64 {
        self.inner.generation()
    }
    fn source(&self) -> String {
        self.inner.source()
    }
    fn entry_count(&self) -> u64 {
        self.inner.entry_count()
    }
    fn info(&self) -> crate::Result<crate::view::info::Info> {
        self.inner.info()
    }
    fn remember(&self, ino: Ino) -> bool {
        self.inner.remember(ino)
    }
    fn forget(&self, ino: Ino, n: u64) {
        self.inner.forget(ino, n)
    }
}

/// READDIR pages through a folder with cookies under the verifier of its first page:
/// every page is cut from the one listing taken for the first (paging `fragments/` of
/// 100,000 fragments must not list it once per page), and the pages together are the
/// folder.
#[test]
fn the_pages_of_a_listing_cost_one_listing() {
    let inner: Arc<dyn FileTree> = Arc::new(
        ArrayTree::open_path(&fixture("dense_basic"), Default::default(), 16 << 20).unwrap(),
    );
    let want: Vec<String> = inner
        .list(crate::view::ROOT)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    let tree = Arc::new(CountingTree {
        inner,
        lists: Default::default(),
    });
    let door = NfsDoor::new(tree.clone(), 2049, 16);
    let root = root_handle(&door);
    let (mut cookie, mut verf, mut names, mut pages) = (0u64, [0u8; 8], Vec::new(), 0);
    loop {
        let mut a = Writer::default();
        a.opaque(&root);
        a.u64(cookie);
        a.fixed(&verf);
        a.u32(200); // room for a couple of entries a page
        let (accept, res) = nfs(&door, 16, &a);
        assert_eq!(accept, Accept::Success);
        let mut r = Reader::new(&res);
        assert_eq!(r.u32().unwrap(), OK);
        if r.u32().unwrap() != 0 {
            r.fixed(ATTR_SIZE - 4).unwrap(); // the attributes after their flag
        }
        verf.copy_from_slice(r.fixed(8).unwrap());
        while r.u32().unwrap() != 0 {
            r.u64().unwrap(); // file id
            names.push(
                std::str::from_utf8(r.opaque(255).unwrap())
                    .unwrap()
                    .to_string(),
            );
            cookie = r.u64().unwrap();
        }
        pages += 1;
        if r.u32().unwrap() != 0 {
            break;
        }
        assert!(pages < 100, "no end");
    }
    assert!(pages > 2, "{pages} pages");
    assert_eq!(names[..2], [".", ".."]);
    assert_eq!(names[2..], want[..]);
    let lists = tree.lists.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(lists, 1, "{lists} listings for {pages} pages");
}

#[test]
fn used_bytes_saturate_instead_of_overflowing() {
    assert_eq!(used(0), 0);
    assert_eq!(used(1), 4096);
    assert_eq!(used(4096), 4096);
    assert_eq!(used(u64::MAX), u64::MAX);
    assert_eq!(used(u64::MAX - 4095), u64::MAX - 4095);
    assert_eq!(used(u64::MAX - 4096), u64::MAX - 4095);
}
