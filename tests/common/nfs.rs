//! A minimal NFSv3 client over one TCP connection for the serve tests, written apart
//! from the server's code (its own XDR): MOUNT, LOOKUP, GETATTR, READ, READDIRPLUS,
//! and raw calls, so the corpus is checked in-process and malformed calls can be sent.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

use super::Tree;

pub const NFS: u32 = 100_003;
pub const MOUNT: u32 = 100_005;
pub const OK: u32 = 0;
pub const STALE: u32 = 70;
pub const ROFS: u32 = 30;

/// Bytes asked per READ.
const READ_SIZE: u32 = 128 << 10;

/// XDR arguments being built.
#[derive(Default)]
pub struct Args(pub Vec<u8>);

impl Args {
    pub fn u32(mut self, v: u32) -> Args {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> Args {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn opaque(mut self, b: &[u8]) -> Args {
        self = self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
        self.0.resize(self.0.len().div_ceil(4) * 4, 0);
        self
    }
}

/// XDR results being read; a short reply panics (the test fails).
pub struct Res<'a>(pub &'a [u8]);

impl Res<'_> {
    pub fn u32(&mut self) -> u32 {
        let (h, t) = self.0.split_at(4);
        self.0 = t;
        u32::from_be_bytes(h.try_into().unwrap())
    }
    pub fn u64(&mut self) -> u64 {
        (u64::from(self.u32()) << 32) | u64::from(self.u32())
    }
    pub fn opaque(&mut self) -> Vec<u8> {
        let n = self.u32() as usize;
        let (b, t) = self.0.split_at(n.div_ceil(4) * 4);
        self.0 = t;
        b[..n].to_vec()
    }
    pub fn skip(&mut self, n: usize) {
        self.0 = &self.0[n..];
    }
    /// A `post_op_attr`: the size, if attributes follow.
    pub fn post_op(&mut self) -> Option<Attr> {
        if self.u32() == 0 {
            return None;
        }
        let kind = self.u32();
        self.skip(16); // mode, nlink, uid, gid
        let size = self.u64();
        self.skip(8 + 8 + 8); // used, rdev, fsid
        let fileid = self.u64();
        self.skip(24);
        Some(Attr { kind, size, fileid })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// 1 a file, 2 a folder.
    pub kind: u32,
    pub size: u64,
    pub fileid: u64,
}

/// One connection to an NFS door, the export's root handle mounted.
pub struct Client {
    stream: Mutex<(TcpStream, u32)>,
    pub root: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Result<Client, String> {
        let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let mut c = Client {
            stream: Mutex::new((s, 1)),
            root: Vec::new(),
        };
        let reply = c.call(MOUNT, 3, 1, Args::default().opaque(b"/"))?;
        let mut r = Res(&reply);
        let status = r.u32();
        if status != 0 {
            return Err(format!("MNT /: status {status}"));
        }
        c.root = r.opaque();
        Ok(c)
    }

    /// Sends one call and returns its results after an accepted, successful header.
    pub fn call(&self, prog: u32, vers: u32, proc_: u32, args: Args) -> Result<Vec<u8>, String> {
        let mut guard = self.stream.lock().unwrap();
        let (s, xid) = &mut *guard;
        *xid += 1;
        let mut msg = Args::default()
            .u32(*xid)
            .u32(0)
            .u32(2)
            .u32(prog)
            .u32(vers)
            .u32(proc_)
            .u32(1) // AUTH_SYS, as clients send it
            .opaque(
                &Args::default()
                    .u32(0)
                    .opaque(b"test")
                    .u32(0)
                    .u32(0)
                    .u32(0)
                    .0,
            )
            .u32(0)
            .u32(0)
            .0;
        msg.extend_from_slice(&args.0);
        let mut framed = ((msg.len() as u32) | 1 << 31).to_be_bytes().to_vec();
        framed.extend_from_slice(&msg);
        s.write_all(&framed).map_err(|e| e.to_string())?;
        let reply = read_record(s)?;
        let mut r = Res(&reply);
        let (rxid, mtype, accepted) = (r.u32(), r.u32(), r.u32());
        if rxid != *xid || mtype != 1 || accepted != 0 {
            return Err(format!("reply {rxid}/{mtype}/{accepted} to call {xid}"));
        }
        r.u32();
        r.opaque();
        let stat = r.u32();
        if stat != 0 {
            return Err(format!("accept_stat {stat}"));
        }
        Ok(r.0.to_vec())
    }

    /// LOOKUP: the status, and the handle and attributes when found.
    pub fn lookup(&self, dir: &[u8], name: &str) -> Result<(Vec<u8>, Option<Attr>), u32> {
        let reply = self
            .call(
                NFS,
                3,
                3,
                Args::default().opaque(dir).opaque(name.as_bytes()),
            )
            .unwrap_or_else(|e| panic!("LOOKUP {name}: {e}"));
        let mut r = Res(&reply);
        match r.u32() {
            OK => {
                let fh = r.opaque();
                Ok((fh, r.post_op()))
            }
            s => Err(s),
        }
    }

    pub fn resolve(&self, path: &str) -> Result<Vec<u8>, String> {
        let mut fh = self.root.clone();
        for name in path.split('/').filter(|p| !p.is_empty()) {
            fh = self
                .lookup(&fh, name)
                .map_err(|s| format!("{path}: {name}: status {s}"))?
                .0;
        }
        Ok(fh)
    }

    pub fn getattr(&self, fh: &[u8]) -> Result<Attr, u32> {
        let reply = self.call(NFS, 3, 1, Args::default().opaque(fh)).unwrap();
        let mut r = Res(&reply);
        match r.u32() {
            OK => {
                let mut with_flag = vec![0, 0, 0, 1];
                with_flag.extend_from_slice(r.0);
                Ok(Res(&with_flag).post_op().unwrap())
            }
            s => Err(s),
        }
    }

    /// The whole file, READ by READ until eof.
    pub fn read_all(&self, fh: &[u8]) -> Result<Vec<u8>, u32> {
        let mut out = Vec::new();
        loop {
            let args = Args::default()
                .opaque(fh)
                .u64(out.len() as u64)
                .u32(READ_SIZE);
            let reply = self.call(NFS, 3, 6, args).unwrap();
            let mut r = Res(&reply);
            let status = r.u32();
            if status != OK {
                return Err(status);
            }
            r.post_op();
            let count = r.u32();
            let eof = r.u32() == 1;
            let data = r.opaque();
            assert_eq!(count as usize, data.len());
            out.extend_from_slice(&data);
            if eof {
                return Ok(out);
            }
            if data.is_empty() {
                panic!("a READ with no bytes and no eof");
            }
        }
    }

    /// READDIRPLUS, page by page: (name, attributes if sent, handle) without `.`/`..`.
    #[allow(clippy::type_complexity)]
    pub fn list(&self, dir: &[u8]) -> Result<Vec<(String, Option<Attr>, Vec<u8>)>, u32> {
        let mut out = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        loop {
            let mut args = Args::default().opaque(dir).u64(cookie);
            args.0.extend_from_slice(&verf);
            // 8 KiB pages, so the larger folders take several calls.
            let reply = self.call(NFS, 3, 17, args.u32(4096).u32(8192)).unwrap();
            let mut r = Res(&reply);
            let status = r.u32();
            if status != OK {
                return Err(status);
            }
            r.post_op();
            verf.copy_from_slice(&r.0[..8]);
            r.skip(8);
            while r.u32() == 1 {
                r.u64();
                let name = String::from_utf8(r.opaque()).unwrap();
                cookie = r.u64();
                let attr = r.post_op();
                let fh = if r.u32() == 1 { r.opaque() } else { Vec::new() };
                if name != "." && name != ".." {
                    out.push((name, attr, fh));
                }
            }
            if r.u32() == 1 {
                return Ok(out);
            }
        }
    }
}

impl Client {
    /// READDIR (names only), in pages of `count` bytes: the names without `.`/`..`.
    pub fn names(&self, dir: &[u8], count: u32) -> Result<Vec<String>, u32> {
        let mut out = Vec::new();
        let mut cookie = 0;
        loop {
            let mut args = Args::default().opaque(dir).u64(cookie);
            args.0.extend_from_slice(&[0; 8]);
            let reply = self.call(NFS, 3, 16, args.u32(count)).unwrap();
            let mut r = Res(&reply);
            let status = r.u32();
            if status != OK {
                return Err(status);
            }
            r.post_op();
            r.skip(8);
            while r.u32() == 1 {
                r.u64();
                let name = String::from_utf8(r.opaque()).unwrap();
                cookie = r.u64();
                if name != "." && name != ".." {
                    out.push(name);
                }
            }
            if r.u32() == 1 {
                return Ok(out);
            }
        }
    }
}

fn read_record(s: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let mut mark = [0; 4];
        s.read_exact(&mut mark).map_err(|e| e.to_string())?;
        let mark = u32::from_be_bytes(mark);
        let start = out.len();
        out.resize(start + (mark & !(1 << 31)) as usize, 0);
        s.read_exact(&mut out[start..]).map_err(|e| e.to_string())?;
        if mark & 1 << 31 != 0 {
            return Ok(out);
        }
    }
}

/// The tree as an NFS client reads it, for `check_tree` / `check_merged`.
pub struct OverNfs(pub Client);

impl Tree for OverNfs {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let dir = self.0.resolve("fragments")?;
        let list = self
            .0
            .list(&dir)
            .map_err(|s| format!("fragments/: status {s}"))?;
        Ok(list.into_iter().map(|(n, _, _)| n).collect())
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let fh = self.0.resolve(path)?;
        self.0
            .read_all(&fh)
            .map_err(|s| format!("{path}: READ status {s}"))
    }
}
