//! A real S3 server for the tests (`s3s-fs`, which scripts/test.sh installs and names in
//! `FRAGFS_TEST_S3S`), started on 127.0.0.1 on a free port with SigV4 keys, over a root
//! folder whose sub-folders are the buckets (objects are plain files: a copied folder is
//! a bucket); and a small HTTP proxy between fragfs and the server that counts requests
//! (and how many GETs were in flight at once), injects faults (error statuses, a server
//! gone, truncated bodies, a wrong Content-Length), and can play a server whose listings
//! carry ETags (s3s-fs lists none; AWS S3, MinIO, Garage and Ceph do).

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "fragfs-test-key";
pub const SECRET_KEY: &str = "fragfs-test-secret";
pub const REGION: &str = "us-east-1";

/// The s3s-fs binary: `FRAGFS_TEST_S3S`, else on the PATH or in the cargo home. Without
/// one the caller skips, saying why (under CI=true that is a failure).
pub fn s3s_binary() -> Option<PathBuf> {
    let candidates = std::env::var_os("FRAGFS_TEST_S3S")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join("s3s-fs"))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default(),
        )
        .chain(std::env::var_os("CARGO_HOME").map(|h| PathBuf::from(h).join("bin/s3s-fs")))
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/s3s-fs")));
    for c in candidates {
        if c.is_file() {
            return Some(c);
        }
    }
    let reason = "s3s-fs is not installed (scripts/test.sh installs it: cargo install s3s-fs \
                  --version 0.14.1 --features binary --locked)";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but {reason}");
    }
    super::skip(reason);
    None
}

/// A running s3s-fs, stopped when dropped.
pub struct S3Server {
    child: Child,
    pub port: u16,
    /// The server's root: each folder in it is a bucket.
    pub root: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl S3Server {
    /// Starts s3s-fs over a new, empty root folder (make buckets with [`S3Server::bucket`]);
    /// `None` (with a printed SKIP) when s3s-fs is not installed.
    pub fn start() -> Option<S3Server> {
        let binary = s3s_binary()?;
        // Buckets of thousands of folders (the corpus, 10,000 fragments): in memory.
        let dir = super::scratch_dir();
        let root = dir.path().to_path_buf();
        for _attempt in 0..5 {
            let port = free_port();
            let child = Command::new(&binary)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .arg(&root)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut server = S3Server {
                child,
                port,
                root: root.clone(),
                _dir: None,
            };
            // Up once it accepts connections; a server that exited lost the port race.
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    server._dir = Some(dir);
                    return Some(server);
                }
                if server.child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("s3s-fs did not start");
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The folder of bucket `name`, made if needed.
    pub fn bucket(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment fragfs and TileDB-Py need to reach the test server: its keys, and no
/// other AWS setting of the machine (nor an instance-metadata lookup).
pub fn aws_env(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("AWS_REGION", REGION)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
}

/// Options to open an S3 store on `endpoint` in-process.
pub fn options(endpoint: &str, retry: Duration) -> fragfs::storage::s3::S3Options {
    fragfs::storage::s3::S3Options {
        endpoint_url: Some(endpoint.to_string()),
        region: Some(REGION.into()),
        profile: None,
        no_sign_request: false,
        virtual_hosted: Some(false),
        retry_timeout: Some(retry),
        keys: Some((ACCESS_KEY.into(), SECRET_KEY.into())),
    }
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub range: Option<String>,
}

impl Seen {
    pub fn is_listing(&self) -> bool {
        self.target.contains("list-type=")
    }

    /// A GET of an object's bytes.
    pub fn is_get(&self) -> bool {
        self.method == "GET" && !self.is_listing()
    }
}

/// What the proxy does to the next object GETs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Answers with this status (and an S3 error document) without asking the server.
    Status(u16),
    /// Forwards the answer with half its body, keeping the Content-Length, and closes.
    Truncate,
    /// Forwards the answer's head only (its Content-Length, no body), and closes.
    Cut,
    /// Forwards the answer with a Content-Length 10 bytes short, and as many bytes.
    ShortLength,
    /// Never answers: holds the connection for two minutes (a server that hangs).
    Stall,
}

#[derive(Default)]
struct ProxyState {
    seen: Vec<Seen>,
    faults: Vec<Fault>,
    /// Object GETs being answered now, and the most there were at once.
    in_flight: usize,
    max_in_flight: usize,
    /// While non-zero, object GETs are held until this many are in flight together.
    hold: usize,
    /// The server's root folder, when listings and GET answers are to carry ETags
    /// computed from the objects' bytes (see [`Proxy::list_etags`]).
    etags_from: Option<PathBuf>,
    /// GET answers carry another ETag than the listings (a server whose listings and
    /// answers never agree).
    etags_disagree: bool,
}

/// What the proxy's connections share.
#[derive(Default)]
struct Shared {
    state: Mutex<ProxyState>,
    /// Signalled when held GETs may go on.
    released: Condvar,
}

/// An HTTP proxy on 127.0.0.1 in front of the server: one request per connection
/// (answers say `Connection: close`), every request recorded.
pub struct Proxy {
    pub port: u16,
    shared: Arc<Shared>,
    down: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

/// How long held GETs wait for the others before they go on anyway (and the test that
/// held them sees fewer in flight than it asked for).
const HOLD_LIMIT: Duration = Duration::from_secs(20);

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared: Arc<Shared> = Arc::default();
        let down = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, d, st) = (shared.clone(), down.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (s, d) = (s.clone(), d.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, upstream, &s, &d);
                });
            }
        });
        Proxy {
            port,
            shared,
            down,
            stop,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ProxyState> {
        self.shared.state.lock().unwrap()
    }

    /// The next object GETs are held (unanswered) until `n` of them are in flight
    /// together, then all go on: requests issued together meet there, requests issued
    /// one after another never do (the first waits [`HOLD_LIMIT`], and
    /// [`Proxy::max_in_flight`] says 1).
    pub fn hold_gets(&self, n: usize) {
        self.state().hold = n;
    }

    /// The most object GETs in flight at once since the last [`Proxy::reset`].
    pub fn max_in_flight(&self) -> usize {
        self.state().max_in_flight
    }

    /// From now on the proxy plays a server whose listings carry ETags (as AWS S3,
    /// MinIO, Garage and Ceph do; s3s-fs lists none): each object of a listing gets
    /// one, and each GET answer the same one in place of the server's, made from the
    /// bytes of the object's file under `root` (the server's root folder) as they are
    /// when asked. Keys must be plain (no character that XML or URLs escape).
    pub fn list_etags(&self, root: &Path) {
        self.state().etags_from = Some(root.to_path_buf());
    }

    /// As [`Proxy::list_etags`], but every GET answer carries an ETag other than the
    /// listing's: a server whose listings and answers never agree.
    pub fn list_disagreeing_etags(&self, root: &Path) {
        let mut s = self.state();
        s.etags_from = Some(root.to_path_buf());
        s.etags_disagree = true;
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// While down, every connection is closed at once, unanswered: a server gone.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The next object GETs meet these faults, one each, in order.
    pub fn inject(&self, faults: &[Fault]) {
        self.state().faults.extend_from_slice(faults);
    }

    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    pub fn faults_left(&self) -> usize {
        self.state().faults.len()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state().seen.clone()
    }

    /// Forgets the requests seen and the most GETs in flight.
    pub fn reset(&self) {
        let mut s = self.state();
        s.seen.clear();
        s.max_in_flight = s.in_flight;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so it sees the stop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads an HTTP head (up to the blank line) from `r`.
fn read_head(r: &mut impl BufRead) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            return Ok(lines);
        }
        lines.push(line);
    }
}

fn header<'a>(head: &'a [String], name: &str) -> Option<&'a str> {
    head.iter().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Reads a body framed by Content-Length or chunked encoding (kept as sent).
fn read_body(r: &mut impl BufRead, head: &[String], is_head: bool) -> std::io::Result<Vec<u8>> {
    let status: u16 = head
        .first()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if is_head || status == 204 || status == 304 {
        return Ok(Vec::new());
    }
    if let Some(len) = header(head, "content-length") {
        let mut body = vec![0u8; len.parse().unwrap_or(0)];
        r.read_exact(&mut body)?;
        return Ok(body);
    }
    if header(head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let mut size_line = String::new();
            r.read_line(&mut size_line)?;
            body.extend_from_slice(size_line.as_bytes());
            let size = usize::from_str_radix(size_line.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0u8; size + 2];
            r.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk);
            if size == 0 {
                return Ok(body);
            }
        }
    }
    Ok(Vec::new())
}

/// An object GET counted in flight while it lives.
struct InFlight<'a>(&'a Shared);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.state.lock().unwrap().in_flight -= 1;
    }
}

impl Shared {
    /// Counts a GET in flight, and holds it while [`Proxy::hold_gets`] asks.
    fn start_get(&self) -> InFlight<'_> {
        let mut s = self.state.lock().unwrap();
        s.in_flight += 1;
        s.max_in_flight = s.max_in_flight.max(s.in_flight);
        if s.hold > 0 && s.in_flight >= s.hold {
            s.hold = 0;
            self.released.notify_all();
        }
        let deadline = Instant::now() + HOLD_LIMIT;
        while s.hold > 0 && Instant::now() < deadline {
            s = self.released.wait_timeout(s, HOLD_LIMIT).unwrap().0;
        }
        InFlight(self)
    }
}

/// The ETag the proxy gives the object `key` of `bucket` (see [`Proxy::list_etags`]): a
/// digest of its file's bytes, quoted as servers send ETags.
fn etag_of(root: &Path, bucket: &str, key: &str) -> Option<String> {
    use sha2::Digest;
    let bytes = std::fs::read(root.join(bucket).join(key)).ok()?;
    let d = sha2::Sha256::digest(&bytes);
    Some(format!(
        "\"{}\"",
        d[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

/// A listing's XML with an `<ETag>` in each `<Contents>` (after its `<Key>`).
fn with_listed_etags(body: &[u8], root: &Path, bucket: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let mut out = String::with_capacity(text.len() + 1024);
    let mut rest = &*text;
    while let Some(at) = rest.find("<Contents><Key>") {
        let key_start = at + "<Contents><Key>".len();
        let Some(len) = rest[key_start..].find("</Key>") else {
            break;
        };
        let key_end = key_start + len + "</Key>".len();
        out.push_str(&rest[..key_end]);
        let key = &rest[key_start..key_start + len];
        if let Some(etag) = etag_of(root, bucket, key) {
            out.push_str(&format!("<ETag>{}</ETag>", etag.replace('"', "&quot;")));
        }
        rest = &rest[key_end..];
    }
    out.push_str(rest);
    out.into_bytes()
}

/// A chunked body (as [`read_body`] keeps it) as the bytes it carries.
fn dechunked(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(nl) = body[at..].windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&body[at..at + nl]);
        let size =
            usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        at += nl + 2;
        if size == 0 || at + size > body.len() {
            break;
        }
        out.extend_from_slice(&body[at..at + size]);
        at += size + 2;
    }
    out
}

fn serve(
    client: TcpStream,
    upstream: u16,
    shared: &Shared,
    down: &AtomicBool,
) -> std::io::Result<()> {
    let state = &shared.state;
    if down.load(Ordering::SeqCst) {
        // Gone: the connection closes unanswered.
        drop(client);
        return Ok(());
    }
    client.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let head = read_head(&mut reader)?;
    let mut parts = head.first().map(|l| l.split(' ')).into_iter().flatten();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let request_body = read_body(&mut reader, &head, false).unwrap_or_default();
    let seen = Seen {
        method: method.clone(),
        target,
        range: header(&head, "range").map(String::from),
    };
    let fault = {
        let mut s = state.lock().unwrap();
        s.seen.push(seen.clone());
        if seen.is_get() && !s.faults.is_empty() {
            Some(s.faults.remove(0))
        } else {
            None
        }
    };
    let _in_flight = seen.is_get().then(|| shared.start_get());
    let (etags_from, etags_disagree) = {
        let s = state.lock().unwrap();
        (s.etags_from.clone(), s.etags_disagree)
    };
    let mut client = client;
    if fault == Some(Fault::Stall) {
        std::thread::sleep(Duration::from_secs(120));
        return Ok(());
    }
    if let Some(Fault::Status(code)) = fault {
        let (reason, code_name) = match code {
            503 => ("Service Unavailable", "SlowDown"),
            _ => ("Internal Server Error", "InternalError"),
        };
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code_name}</Code>\
             <Message>injected by the test proxy</Message></Error>"
        );
        write!(
            client,
            "HTTP/1.1 {code} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )?;
        let _ = client.shutdown(Shutdown::Both);
        return Ok(());
    }
    let mut up = TcpStream::connect(("127.0.0.1", upstream))?;
    up.set_read_timeout(Some(Duration::from_secs(60)))?;
    for line in &head {
        write!(up, "{line}\r\n")?;
    }
    write!(up, "\r\n")?;
    up.write_all(&request_body)?;
    let mut up_reader = BufReader::new(up);
    let mut answer = read_head(&mut up_reader)?;
    let mut body = read_body(&mut up_reader, &answer, method == "HEAD")?;
    if let Some(root) = &etags_from {
        // `/bucket/key?query`, path style.
        let path = seen.target.split('?').next().unwrap_or_default();
        let (bucket, key) = path
            .trim_start_matches('/')
            .split_once('/')
            .unwrap_or((path.trim_start_matches('/'), ""));
        if seen.is_listing() {
            if header(&answer, "transfer-encoding").is_some() {
                body = dechunked(&body);
                answer.retain(|l| !l.to_ascii_lowercase().starts_with("transfer-encoding"));
            }
            body = with_listed_etags(&body, root, bucket);
        } else if seen.is_get() {
            if let Some(etag) = etag_of(root, bucket, key) {
                let etag = match etags_disagree {
                    true => etag.replace('"', "\"x"),
                    false => etag,
                };
                answer.retain(|l| !l.to_ascii_lowercase().starts_with("etag:"));
                answer.push(format!("ETag: {etag}"));
            }
        }
    }
    let keep: Vec<&String> = answer
        .iter()
        .filter(|l| {
            let name = l.split(':').next().unwrap_or_default().trim();
            !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("content-length")
        })
        .collect();
    let chunked = header(&answer, "transfer-encoding").is_some();
    let (declared, sent) = match fault {
        Some(Fault::Truncate) => (body.len(), body.len() / 2),
        Some(Fault::Cut) => (body.len(), 0),
        Some(Fault::ShortLength) => (body.len().saturating_sub(10), body.len().saturating_sub(10)),
        _ => (body.len(), body.len()),
    };
    for line in keep {
        write!(client, "{line}\r\n")?;
    }
    if !chunked {
        write!(client, "Content-Length: {declared}\r\n")?;
    }
    write!(client, "Connection: close\r\n\r\n")?;
    client.write_all(&body[..sent])?;
    client.flush()?;
    let _ = client.shutdown(Shutdown::Both);
    Ok(())
}

/// Copies the folder `from` to `to` (a bucket, or a prefix in one).
pub fn upload(from: &Path, to: &Path) {
    super::copy_dir(from, to);
}
