//! [`Server`]: the doors of one tree on one tokio runtime, and [`run`], what
//! `fragfs serve` does with it until a signal.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::array::OpenOptions;
use crate::daemon::Signals;
use crate::error::{Error, Result};
use crate::secret::Secret;
use crate::storage::s3::S3Options;
use crate::view::prefetch::Prefetcher;
use crate::view::{open_disk_cache, open_source, ChunkOptions, FileTree};

use super::budget::Budget;
use super::conn::{self, Slots};
use super::origin::{Cors, Rules};
use super::sizing::Sizing;
use super::tls::TlsFiles;
use super::{http, nfs, s3api, webdav};

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
    pub doors: Doors,
}

/// Which doors listen where, and what guards them.
#[derive(Debug, Clone, Default)]
pub struct Doors {
    /// HTTP; `fragfs serve` uses [`DEFAULT_HTTP`] when no door is named.
    pub http: Option<SocketAddr>,
    /// WebDAV (read-only, class 1).
    pub webdav: Option<SocketAddr>,
    /// Required by HTTP and WebDAV as a bearer token or basic-auth password.
    pub token: Option<Secret>,
    /// NFSv3 (with MOUNT and a portmapper on the same port); it has no access
    /// control, so beyond loopback only with `insecure_listen`.
    pub nfs: Option<SocketAddr>,
    /// The S3 API (one read-only bucket).
    pub s3: Option<SocketAddr>,
    /// The S3 API's keys and bucket name.
    pub s3_door: s3api::S3Door,
    /// Listen beyond loopback without an access control.
    pub insecure_listen: bool,
    /// Names, besides the loopback ones, that requests to a listener without an access
    /// control may carry as `Host` (`--allowed-host`; see [`super::origin`]).
    pub allowed_hosts: Vec<String>,
    /// Origins whose pages may read the answers (`--cors-origin`; `*`: all, with a
    /// token).
    pub cors_origins: Vec<String>,
    /// HTTPS for the HTTP, WebDAV and S3 doors.
    pub tls: Option<TlsFiles>,
    pub limits: Limits,
}

/// The address `fragfs serve` listens on when no door is named.
pub const DEFAULT_HTTP: &str = "127.0.0.1:8080";

/// Checks the request, opens the tree, listens, and serves until SIGINT/SIGTERM/SIGHUP;
/// then stops accepting and gives running requests [`crate::daemon::STOP_GRACE`].
pub fn run(mut request: ServeRequest) -> Result<()> {
    let doors = &mut request.doors;
    if [doors.http, doors.webdav, doors.nfs, doors.s3]
        .iter()
        .all(Option::is_none)
    {
        doors.http = DEFAULT_HTTP.parse().ok();
    }
    for warning in request.doors.check_access()? {
        log::warn!("{warning}");
        eprintln!("fragfs: warning: {warning}");
    }
    crate::daemon::limit_heap_arenas();
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
    let server = Server::start(tree, &request.doors, request.threads)?;
    for (door, url) in server.urls() {
        ready(door, &url);
    }
    let sig = signals
        .wait()
        .map_err(|e| Error::io(Path::new("signals"), e))?;
    log::info!("signal {sig}: no new connections; finishing the requests running");
    server.stop();
    log::info!("stopped serving {}", request.array.display());
    Ok(())
}

/// The doors of one tree, serving on their own runtime until [`Server::stop`] (or drop).
pub struct Server {
    runtime: Option<tokio::runtime::Runtime>,
    stop: tokio::sync::watch::Sender<bool>,
    running: Vec<tokio::task::JoinHandle<()>>,
    http: Option<SocketAddr>,
    /// Connections of every door together.
    counts: Arc<conn::Counts>,
    webdav: Option<SocketAddr>,
    nfs: Option<SocketAddr>,
    /// The S3 API's address and bucket.
    s3: Option<(SocketAddr, String)>,
    /// Whether the HTTP-based doors speak TLS.
    https: bool,
    budget: Arc<Budget>,
}

impl Server {
    /// Binds every door of `doors` (an address in use is an error naming the door) and
    /// starts serving `tree` with `threads` threads. The access rules are not checked
    /// here (see [`Doors::check_access`]): tests and embedders serve as they choose.
    pub fn start(tree: Arc<dyn FileTree>, doors: &Doors, threads: usize) -> Result<Server> {
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
        let tls = doors.tls.as_ref().map(super::tls::acceptor).transpose()?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let budget = Arc::new(Budget::new(doors.limits.answer_memory));
        let mut server = Server {
            runtime: None,
            stop,
            running: Vec::new(),
            http: None,
            counts: Arc::default(),
            webdav: None,
            nfs: None,
            s3: None,
            https: tls.is_some(),
            budget: budget.clone(),
        };
        let wiring = conn::Wiring {
            limits: doors.limits.clone(),
            slots: Arc::new(Slots::new(&doors.limits)),
            stop: stopped,
            counts: server.counts.clone(),
        };
        // Text files are rendered to learn their size in a pool of their own, never on
        // the threads that read bytes.
        let sizing = Sizing::start(
            tree.clone(),
            (threads / 2).max(1),
            doors.limits.sizing_deadline,
        );
        // One HTTP door (and its read-ahead workers) answers the files of every door.
        let files = Arc::new(http::HttpDoor {
            tree: tree.clone(),
            token: doors.token.clone(),
            ahead: Some(Arc::new(Prefetcher::new(tree.clone(), threads))),
            sizing: sizing.clone(),
            budget: budget.clone(),
        });
        let guarded = doors.token.is_some();
        let door = |name, addr: SocketAddr, guarded, methods, allowed: &[String]| {
            let cors =
                Cors::from_args(&doors.cors_origins, guarded).map_err(Error::InvalidArgument)?;
            Ok::<_, Error>(conn::Door {
                name,
                rules: Arc::new(Rules::new(addr, guarded, allowed, cors)),
                methods,
                tls: tls.clone(),
            })
        };
        if let Some(addr) = doors.http {
            let listener = bind(&runtime, addr, "HTTP")?;
            server.http = listener.local_addr().ok();
            let files = files.clone();
            let service = hyper::service::service_fn(move |req| files.clone().answer(req));
            let door = door("http", addr, guarded, http::METHODS, &doors.allowed_hosts)?;
            let serving = conn::serve(listener, service, door, wiring.clone());
            server.running.push(runtime.spawn(serving));
        }
        if let Some(addr) = doors.webdav {
            let listener = bind(&runtime, addr, "WebDAV")?;
            server.webdav = listener.local_addr().ok();
            let dav = Arc::new(webdav::WebDavDoor::new(files.clone()));
            let service = hyper::service::service_fn(move |req| dav.clone().answer(req));
            let door = door(
                "webdav",
                addr,
                guarded,
                webdav::METHODS,
                &doors.allowed_hosts,
            )?;
            let serving = conn::serve(listener, service, door, wiring.clone());
            server.running.push(runtime.spawn(serving));
        }
        if let Some(addr) = doors.nfs {
            let listener = bind(&runtime, addr, "NFS")?;
            server.nfs = listener.local_addr().ok();
            let port = server.nfs.map_or(0, |a| a.port());
            let nfs_door = Arc::new(
                nfs::NfsDoor::new(tree.clone(), port, nfs::handles::HELD)
                    .with_sizes(sizing.clone()),
            );
            server.running.push(runtime.spawn(nfs::connection::serve(
                listener,
                nfs_door,
                sizing.clone(),
                budget.clone(),
                wiring.clone(),
            )));
        }
        if let Some(addr) = doors.s3 {
            let bucket = match &doors.s3_door.bucket {
                Some(b) => b.clone(),
                None => s3api::bucket_name(&tree.source()),
            };
            let listener = bind(&runtime, addr, "S3")?;
            if let Ok(a) = listener.local_addr() {
                server.s3 = Some((a, bucket.clone()));
            }
            let service = s3api::service(
                tree.clone(),
                files.ahead.clone(),
                sizing.clone(),
                budget.clone(),
                bucket,
                &doors.s3_door,
            );
            // Virtual-hosted requests name the bucket in the host: the domain's names
            // are the server's.
            let mut allowed = doors.allowed_hosts.clone();
            allowed.extend(doors.s3_door.domain.iter().map(|d| format!(".{d}")));
            let door = door(
                "s3",
                addr,
                doors.s3_door.keys.is_some(),
                s3api::METHODS,
                &allowed,
            )?;
            let serving = conn::serve(listener, service, door, wiring.clone());
            server.running.push(runtime.spawn(serving));
        }
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// The address the HTTP door listens on (the port chosen when asked for port 0).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http
    }

    /// Connections open now (all doors): what a client that went away still costs.
    pub fn connections(&self) -> usize {
        self.counts.open.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Connections accepted since the start (all doors).
    pub fn accepted(&self) -> usize {
        self.counts
            .accepted
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Connections closed at once because their client held all its own.
    pub fn refused(&self) -> usize {
        self.counts
            .refused
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Doors holding an accepted connection that waits for a free slot now, every slot
    /// being held (tests watch it).
    pub fn doors_waiting_for_a_slot(&self) -> usize {
        self.counts
            .waiting_for_slot
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Answers whose first chunk waits for its share of the memory budget now (tests
    /// watch it).
    pub fn answers_waiting_for_memory(&self) -> usize {
        self.budget.first_waiting()
    }

    /// Bytes of the answers' memory budget free now.
    pub fn budget_free(&self) -> usize {
        self.budget.free()
    }

    /// The address the WebDAV door listens on.
    pub fn webdav_addr(&self) -> Option<SocketAddr> {
        self.webdav
    }

    /// The address the NFS door listens on.
    pub fn nfs_addr(&self) -> Option<SocketAddr> {
        self.nfs
    }

    /// The address the S3 API listens on and its bucket.
    pub fn s3_addr(&self) -> Option<(SocketAddr, String)> {
        self.s3.clone()
    }

    /// Each door and its URL (the S3 API's: its bucket, path style).
    pub fn urls(&self) -> Vec<(&'static str, String)> {
        let scheme = if self.https { "https" } else { "http" };
        let mut out = Vec::new();
        if let Some(a) = self.http {
            out.push(("http", format!("{scheme}://{a}/")));
        }
        if let Some(a) = self.webdav {
            out.push(("webdav", format!("{scheme}://{a}/")));
        }
        if let Some(a) = self.nfs {
            out.push(("nfs", format!("nfs://{a}/")));
        }
        if let Some((a, bucket)) = &self.s3 {
            out.push(("s3", format!("{scheme}://{a}/{bucket}/")));
        }
        out
    }

    /// Stops accepting, lets the requests running finish for at most
    /// [`crate::daemon::STOP_GRACE`], then closes every connection.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let _ = self.stop.send(true);
        let grace = crate::daemon::STOP_GRACE;
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

impl Doors {
    /// Refuses what would let in whom it must not: a door beyond loopback without an
    /// access control (unless `--insecure-listen`), a token or S3 key shorter than
    /// [`crate::secret::MIN_SECRET_BYTES`], CORS for every origin without a token, a
    /// bad bucket or domain name. Returns the warnings to print at start: a secret
    /// that would travel in clear over a network.
    pub fn check_access(&self) -> Result<Vec<String>> {
        if let Some(token) = &self.token {
            token
                .check_strength("--token")
                .map_err(Error::InvalidArgument)?;
        }
        if let Some((access, secret)) = &self.s3_door.keys {
            Secret::new(access.clone())
                .check_strength("--s3-access-key")
                .map_err(Error::InvalidArgument)?;
            secret
                .check_strength("--s3-secret-key")
                .map_err(Error::InvalidArgument)?;
        }
        let beyond = |addr: &Option<SocketAddr>| addr.filter(|a| !a.ip().is_loopback());
        if let Some(addr) = beyond(&self.http) {
            if self.token.is_none() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--http {addr} is reachable beyond this machine: give --token-file (clients \
                     send the token as a bearer token or a basic-auth password), or \
                     --insecure-listen"
                )));
            }
        }
        if let Some(addr) = beyond(&self.webdav) {
            if self.token.is_none() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--webdav {addr} is reachable beyond this machine: give --token-file \
                     (clients send the token as a basic-auth password), or --insecure-listen"
                )));
            }
        }
        if let Some(addr) = beyond(&self.nfs) {
            if !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--nfs {addr} is reachable beyond this machine and NFSv3 has no \
                     authentication (any client may claim any user): give \
                     --insecure-listen to serve it anyway"
                )));
            }
        }
        if let Some(bucket) = &self.s3_door.bucket {
            if !s3api::valid_bucket(bucket) {
                return Err(Error::InvalidArgument(format!(
                    "--bucket {bucket:?} is not a bucket name (3-63 of a-z, 0-9, . and -, \
                     starting and ending with a letter or digit)"
                )));
            }
        }
        if let Some(domain) = &self.s3_door.domain {
            if !s3api::valid_domain(domain) {
                return Err(Error::InvalidArgument(format!(
                    "--s3-domain {domain:?} is not a domain name (dot-separated labels of \
                     letters, digits and -)"
                )));
            }
        }
        if let Some(addr) = beyond(&self.s3) {
            if self.s3_door.keys.is_none() && !self.insecure_listen {
                return Err(Error::InvalidArgument(format!(
                    "--s3 {addr} is reachable beyond this machine: give --s3-access-key and \
                     --s3-secret-key-file (clients sign with them), or --insecure-listen"
                )));
            }
        }
        for host in &self.allowed_hosts {
            let name = host.trim_start_matches('.');
            if !s3api::valid_domain(name.trim_end_matches('.')) {
                return Err(Error::InvalidArgument(format!(
                    "--allowed-host {host:?} is not a host name (a leading . allows every \
                     name below it)"
                )));
            }
        }
        let tokened = self.http.is_some() || self.webdav.is_some();
        if tokened {
            Cors::from_args(&self.cors_origins, self.token.is_some())
                .map_err(Error::InvalidArgument)?;
        }
        if self.s3.is_some() {
            Cors::from_args(&self.cors_origins, self.s3_door.keys.is_some())
                .map_err(Error::InvalidArgument)?;
        }
        let mut warnings = Vec::new();
        if self.tls.is_none() {
            for (door, addr, secret) in [
                ("--http", beyond(&self.http), self.token.is_some()),
                ("--webdav", beyond(&self.webdav), self.token.is_some()),
                ("--s3", beyond(&self.s3), self.s3_door.keys.is_some()),
            ] {
                if let (Some(addr), true) = (addr, secret) {
                    warnings.push(format!(
                        "{door} {addr}: the {} travels in clear beyond this machine: give \
                         --tls-cert and --tls-key (or put an HTTPS proxy in front)",
                        if door == "--s3" {
                            "signed requests (and what they read)"
                        } else {
                            "token"
                        }
                    ));
                }
            }
        }
        Ok(warnings)
    }
}

/// Says on stdout (one line per door, flushed: scripts and tests wait for it) and in
/// the log where a door listens; with port 0 the system chose the port.
fn ready(door: &str, url: &str) {
    use std::io::Write;
    log::info!("serving over {door} on {url}");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{door} {url}");
    let _ = out.flush();
}

fn bind(
    runtime: &tokio::runtime::Runtime,
    addr: SocketAddr,
    door: &str,
) -> Result<tokio::net::TcpListener> {
    let _entered = runtime.enter();
    let std_listener = std::net::TcpListener::bind(addr).map_err(|e| {
        Error::setup(
            e.raw_os_error().unwrap_or(libc::EADDRINUSE),
            format!("{door}: cannot listen on {addr}: {e}"),
        )
    })?;
    std_listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(std_listener))
        .map_err(|e| Error::io(Path::new("listener"), e))
}
