//! [`Server`]: the doors of one tree on one tokio runtime, and [`run`], what
//! `fragfs serve` does with it until a signal.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::array::OpenOptions;
use crate::daemon::Signals;
use crate::error::{Error, Result};
use crate::storage::s3::S3Options;
use crate::view::prefetch::Prefetcher;

use super::{conn, http, nfs, s3api, webdav};
use crate::view::{open_disk_cache, open_source, ChunkOptions, FileTree};

pub use super::conn::Limits;

/// Everything `fragfs serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeRequest {
    pub array: PathBuf,
    pub s3: S3Options,
    pub options: OpenOptions,
    pub chunk: ChunkOptions,
    pub cache_size: u64,
    /// The disk cache (`--cache-dir`), if asked for.
    pub disk_cache: Option<crate::storage::diskcache::CacheConfig>,
    /// Threads reading the tree (blocking work); as many serve the network.
    pub threads: usize,
    pub faces: Faces,
}

/// Which faces listen where, and what guards them.
#[derive(Debug, Clone, Default)]
pub struct Faces {
    /// HTTP; `fragfs serve` uses [`DEFAULT_HTTP`] when no face is named.
    pub http: Option<SocketAddr>,
    /// WebDAV (read-only, class 1).
    pub webdav: Option<SocketAddr>,
    /// Required by HTTP and WebDAV as a bearer token or basic-auth password.
    pub token: Option<String>,
    /// NFSv3 (with MOUNT and a portmapper on the same port); it has no access
    /// control, so beyond loopback only with `insecure_listen`.
    pub nfs: Option<SocketAddr>,
    /// The S3 API (one read-only bucket).
    pub s3: Option<SocketAddr>,
    /// The S3 API's keys and bucket name.
    pub s3_face: s3api::S3Face,
    /// Listen beyond loopback without an access control.
    pub insecure_listen: bool,
    pub limits: Limits,
}

/// The address `fragfs serve` listens on when no face is named.
pub const DEFAULT_HTTP: &str = "127.0.0.1:8080";

/// Checks the request, opens the tree, listens, and serves until SIGINT/SIGTERM/SIGHUP;
/// then stops accepting and gives running requests [`crate::mount::STOP_GRACE`].
pub fn run(mut request: ServeRequest) -> Result<()> {
    if [
        request.faces.http,
        request.faces.webdav,
        request.faces.nfs,
        request.faces.s3,
    ]
    .iter()
    .all(Option::is_none)
    {
        request.faces.http = DEFAULT_HTTP.parse().ok();
    }
    request.faces.check_access()?;
    crate::mount::limit_heap_arenas();
    // Before any thread exists, so every thread inherits the blocked mask and only the
    // waiting thread below sees these signals.
    let signals = Signals::block().map_err(|e| Error::io(Path::new("signals"), e))?;
    let tree = open_source(
        &request.array,
        &request.s3,
        request.options.clone(),
        request.chunk,
        request.cache_size,
        open_disk_cache(request.disk_cache.as_ref())?,
    )?;
    let server = Server::start(tree, &request.faces, request.threads)?;
    for (face, url) in server.urls() {
        ready(face, &url);
    }
    let sig = signals
        .wait()
        .map_err(|e| Error::io(Path::new("signals"), e))?;
    log::info!("signal {sig}: no new connections; finishing the requests running");
    server.stop();
    log::info!("stopped serving {}", request.array.display());
    Ok(())
}

/// The faces of one tree, serving on their own runtime until [`Server::stop`] (or drop).
pub struct Server {
    runtime: Option<tokio::runtime::Runtime>,
    stop: tokio::sync::watch::Sender<bool>,
    running: Vec<tokio::task::JoinHandle<()>>,
    http: Option<SocketAddr>,
    /// Connections of every face together.
    counts: Arc<conn::Counts>,
    webdav: Option<SocketAddr>,
    nfs: Option<SocketAddr>,
    /// The S3 API's address and bucket.
    s3: Option<(SocketAddr, String)>,
}

impl Server {
    /// Binds every face of `faces` (an address in use is an error naming the face) and
    /// starts serving `tree` with `threads` threads.
    pub fn start(tree: Arc<dyn FileTree>, faces: &Faces, threads: usize) -> Result<Server> {
        let threads = threads.max(1);
        // As many threads read the tree as serve the network, as the mount has as many
        // serving threads: with more, each chunk of a body woke a thread that had gone
        // cold, and the kernel often queued it behind a busy core while the other idled
        // (a 512 MiB GET of the bench, alternating rounds on 2 cores: 8 blocking threads
        // and four chunks in flight 0.47 s, 2 threads and six chunks 0.39 s, the mount's
        // `cat` 0.42 s with the array's files cached; cold 0.49, 0.43 and 0.38 s). A
        // finishing thread now takes the next queued read without sleeping. No blocking
        // task waits for another, so a small pool cannot deadlock.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .max_blocking_threads(threads)
            .thread_name("fragfs-serve")
            .enable_all()
            .build()
            .map_err(|e| Error::io(Path::new("runtime"), e))?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut server = Server {
            runtime: None,
            stop,
            running: Vec::new(),
            http: None,
            counts: Arc::default(),
            webdav: None,
            nfs: None,
            s3: None,
        };
        // One HTTP face (and its read-ahead workers) answers the files of every face.
        let files = Arc::new(http::HttpFace {
            tree: tree.clone(),
            token: faces.token.clone(),
            ahead: Some(Arc::new(Prefetcher::new(tree.clone(), threads))),
        });
        if let Some(addr) = faces.http {
            let listener = bind(&runtime, addr, "HTTP")?;
            server.http = listener.local_addr().ok();
            let face = files.clone();
            let service = hyper::service::service_fn(move |req| face.clone().answer(req));
            let limits = faces.limits.clone();
            server.running.push(runtime.spawn(conn::serve(
                listener,
                service,
                limits,
                stopped.clone(),
                "http",
                server.counts.clone(),
            )));
        }
        if let Some(addr) = faces.webdav {
            let listener = bind(&runtime, addr, "WebDAV")?;
            server.webdav = listener.local_addr().ok();
            let face = Arc::new(webdav::WebDavFace::new(files.clone()));
            let service = hyper::service::service_fn(move |req| face.clone().answer(req));
            server.running.push(runtime.spawn(conn::serve(
                listener,
                service,
                faces.limits.clone(),
                stopped.clone(),
                "webdav",
                server.counts.clone(),
            )));
        }
        if let Some(addr) = faces.nfs {
            let listener = bind(&runtime, addr, "NFS")?;
            server.nfs = listener.local_addr().ok();
            let port = server.nfs.map_or(0, |a| a.port());
            let face = Arc::new(nfs::NfsFace::new(tree.clone(), port, nfs::handles::HELD));
            server.running.push(runtime.spawn(nfs::connection::serve(
                listener,
                face,
                faces.limits.clone(),
                stopped.clone(),
                server.counts.clone(),
            )));
        }
        if let Some(addr) = faces.s3 {
            let bucket = match &faces.s3_face.bucket {
                Some(b) => b.clone(),
                None => s3api::bucket_name(&tree.source()),
            };
            let listener = bind(&runtime, addr, "S3")?;
            if let Ok(a) = listener.local_addr() {
                server.s3 = Some((a, bucket.clone()));
            }
            let service = s3api::service(tree.clone(), files.ahead.clone(), bucket, &faces.s3_face);
            server.running.push(runtime.spawn(conn::serve(
                listener,
                service,
                faces.limits.clone(),
                stopped.clone(),
                "s3",
                server.counts.clone(),
            )));
        }
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// The address the HTTP face listens on (the port chosen when asked for port 0).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http
    }

    /// Connections open now (all faces): what a client that went away still costs.
    pub fn connections(&self) -> usize {
        self.counts.open.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Connections accepted since the start (all faces).
    pub fn accepted(&self) -> usize {
        self.counts
            .accepted
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The address the WebDAV face listens on.
    pub fn webdav_addr(&self) -> Option<SocketAddr> {
        self.webdav
    }

    /// The address the NFS face listens on.
    pub fn nfs_addr(&self) -> Option<SocketAddr> {
        self.nfs
    }

    /// The address the S3 API listens on and its bucket.
    pub fn s3_addr(&self) -> Option<(SocketAddr, String)> {
        self.s3.clone()
    }

    /// Each face and its URL (the S3 API's: its bucket, path style).
    pub fn urls(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(a) = self.http {
            out.push(("http", format!("http://{a}/")));
        }
        if let Some(a) = self.webdav {
            out.push(("webdav", format!("http://{a}/")));
        }
        if let Some(a) = self.nfs {
            out.push(("nfs", format!("nfs://{a}/")));
        }
        if let Some((a, bucket)) = &self.s3 {
            out.push(("s3", format!("http://{a}/{bucket}/")));
        }
        out
    }

    /// Stops accepting, lets the requests running finish for at most
    /// [`crate::mount::STOP_GRACE`], then closes every connection.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let _ = self.stop.send(true);
        let grace = crate::mount::STOP_GRACE;
        let running = std::mem::take(&mut self.running);
        let finished = runtime.block_on(async {
            tokio::time::timeout(grace, async {
                for r in running {
                    let _ = r.await;
                }
            })
            .await
        });
        if finished.is_err() {
            log::warn!(
                "requests still running {} s after the stop: closing their connections",
                grace.as_secs()
            );
        }
        runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl Faces {
    /// A face may listen beyond loopback only behind an access control, or when asked
    /// to with `--insecure-listen`.
    pub fn check_access(&self) -> Result<()> {
        if let Some(addr) = self.http {
            if !addr.ip().is_loopback() && self.token.is_none() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--http {addr} is reachable beyond this machine: give --token (clients \
                     send it as a bearer token or a basic-auth password), or --insecure-listen"
                )));
            }
        }
        if let Some(addr) = self.webdav {
            if !addr.ip().is_loopback() && self.token.is_none() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--webdav {addr} is reachable beyond this machine: give --token (clients \
                     send it as a basic-auth password), or --insecure-listen"
                )));
            }
        }
        if let Some(addr) = self.nfs {
            if !addr.ip().is_loopback() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--nfs {addr} is reachable beyond this machine and NFSv3 has no \
                     authentication (any client may claim any user): give \
                     --insecure-listen to serve it anyway"
                )));
            }
        }
        if let Some(bucket) = &self.s3_face.bucket {
            if !s3api::valid_bucket(bucket) {
                return Err(Error::InvalidArgument(format!(
                    "--bucket {bucket:?} is not a bucket name (3-63 of a-z, 0-9, . and -, \
                     starting and ending with a letter or digit)"
                )));
            }
        }
        if let Some(domain) = &self.s3_face.domain {
            if !s3api::valid_domain(domain) {
                return Err(Error::InvalidArgument(format!(
                    "--s3-domain {domain:?} is not a domain name (dot-separated labels of \
                     letters, digits and -)"
                )));
            }
        }
        if let Some(addr) = self.s3 {
            if !addr.ip().is_loopback() && self.s3_face.keys.is_none() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--s3 {addr} is reachable beyond this machine: give --s3-access-key and \
                     --s3-secret-key (clients sign with them), or --insecure-listen"
                )));
            }
        }
        Ok(())
    }
}

/// Says on stdout (one line per face, flushed: scripts and tests wait for it) and in
/// the log where a face listens; with port 0 the system chose the port.
fn ready(face: &str, url: &str) {
    use std::io::Write;
    log::info!("serving over {face} on {url}");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{face} {url}");
    let _ = out.flush();
}

fn bind(
    runtime: &tokio::runtime::Runtime,
    addr: SocketAddr,
    face: &str,
) -> Result<tokio::net::TcpListener> {
    let _entered = runtime.enter();
    let std_listener = std::net::TcpListener::bind(addr).map_err(|e| {
        Error::setup(
            e.raw_os_error().unwrap_or(libc::EADDRINUSE),
            format!("{face}: cannot listen on {addr}: {e}"),
        )
    })?;
    std_listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(std_listener))
        .map_err(|e| Error::io(Path::new("listener"), e))
}
