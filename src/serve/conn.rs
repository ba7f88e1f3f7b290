//! Connections of every door: accepted within one bound for the whole server and one per
//! client address, timed out when a client stops sending or reading, and closed
//! gracefully when the server stops. For the hyper-based doors (HTTP, the S3 API,
//! WebDAV) also TLS, and the rules every request meets before a door sees it: the
//! `Host` rule, CORS preflights and headers ([`super::origin`]). A slow or hostile
//! client costs one connection slot and a few kilobytes, never a thread; the bytes of
//! the answers in flight are bounded by [`super::budget`].

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::service::Service;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use super::origin::Rules;

/// What one server allows its clients.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once, every door together; more wait in the listen
    /// backlog.
    pub max_connections: usize,
    /// Connections served at once from one client address; more are closed at once
    /// (an HTTP door first answers 503), so one client cannot take every slot.
    pub max_connections_per_client: usize,
    /// Bytes of a request's head (request line and headers); more answers 431.
    pub header_bytes: usize,
    /// Time a client has to send a request's head (and finish a TLS handshake) once its
    /// connection is open or idle.
    pub header_timeout: Duration,
    /// Time without a byte moving either way (a client that stops reading a body, or
    /// stays idle between requests) before the connection is closed.
    pub idle_timeout: Duration,
    /// Time a request waits for a text file to be rendered to learn its size (in the
    /// sizing pool, [`super::sizing`]) before it is answered "try again later".
    pub sizing_deadline: Duration,
    /// Bytes the answers of every door hold in memory at once ([`super::budget`]).
    pub answer_memory: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 1024,
            max_connections_per_client: 256,
            header_bytes: 16 << 10,
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            sizing_deadline: Duration::from_secs(30),
            answer_memory: super::budget::DEFAULT_BYTES,
        }
    }
}

/// The address of the client a request came from (in the request's extensions), for
/// the doors' log lines.
#[derive(Debug, Clone, Copy)]
pub struct Client(pub SocketAddr);

/// A body the connection layer can answer with by itself (a refusal, a preflight).
pub trait Plain: Sized {
    fn plain(text: &str) -> Self;
}

/// What the connections of every door of one server share: the limits, the slots, the
/// stop signal and the counts.
#[derive(Clone)]
pub struct Wiring {
    pub limits: Limits,
    pub slots: Arc<Slots>,
    pub stop: watch::Receiver<bool>,
    pub counts: Arc<Counts>,
}

/// One hyper-based door as the connections see it.
pub struct Door {
    /// For log lines: `http`, `webdav`, `s3`.
    pub name: &'static str,
    pub rules: Arc<Rules>,
    /// The methods a CORS preflight may be told.
    pub methods: &'static str,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Serves `service` on every connection `listener` accepts until `stop` turns true;
/// then stops accepting, lets each connection finish the request it is in, and returns
/// once all are closed (the caller bounds how long it waits).
pub async fn serve<S, B>(listener: TcpListener, service: S, door: Door, wiring: Wiring)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Plain + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let idle = wiring.limits.idle_timeout;
    let header_timeout = wiring.limits.header_timeout;
    let header_bytes = wiring.limits.header_bytes;
    let door = Arc::new(door);
    let name = door.name;
    accept(listener, wiring, name, move |stream, peer, mut stop| {
            let (service, guarded) = (service.clone(), door.clone());
            let service = hyper::service::service_fn(move |req| {
                guard(service.clone(), guarded.clone(), peer, req)
            });
            let tls = door.tls.clone();
            async move {
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .max_buf_size(header_bytes.max(8192));
                let stream: Box<dyn Stream> = match tls {
                    None => Box::new(stream),
                    Some(tls) => {
                        let handshake = tokio::time::timeout(header_timeout, tls.accept(stream));
                        match handshake.await {
                            Ok(Ok(s)) => Box::new(s),
                            Ok(Err(e)) => {
                                log::debug!("{name}: TLS handshake with {peer}: {e}");
                                return;
                            }
                            Err(_) => {
                                log::debug!("{name}: TLS handshake with {peer}: timed out");
                                return;
                            }
                        }
                    }
                };
                let io = TokioIo::new(Watchdog::new(stream, idle));
                let conn = builder.serve_connection(io, service);
                tokio::pin!(conn);
                let result = tokio::select! {
                    r = conn.as_mut() => r,
                    _ = stop.changed() => {
                        conn.as_mut().graceful_shutdown();
                        conn.await
                    }
                };
                if let Err(e) = result {
                    log::debug!("{name}: connection from {peer}: {e}");
                }
            }
        })
    .await;
}

/// A connection's byte stream: a TCP socket, or TLS over one.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// One request through the rules every request of `door` meets before `service`
/// sees it: a `Host` that is not one of the server's names is refused (403, one log
/// line), a CORS preflight is answered here, and an answer carries CORS headers only
/// for an origin that may read it. The client's address goes into the request's
/// extensions ([`Client`]).
async fn guard<S, B>(
    service: S,
    door: Arc<Door>,
    peer: SocketAddr,
    mut req: Request<Incoming>,
) -> Result<Response<B>, S::Error>
where
    S: Service<Request<Incoming>, Response = Response<B>>,
    B: Plain,
{
    if let Err(wrong) = door.rules.check_host(req.headers()) {
        log::warn!(
            "{}: refused {} {} from {peer}: Host {:?} is not a name of this server (a DNS \
             rebinding page, or a name to allow with --allowed-host)",
            door.name,
            req.method(),
            req.uri().path(),
            wrong.0
        );
        return Ok(plain(
            StatusCode::FORBIDDEN,
            "this Host is not a name of this server (see --allowed-host)\n",
        ));
    }
    if Rules::is_preflight(req.method(), req.headers()) {
        return Ok(match door.rules.preflight(req.headers(), door.methods) {
            Some(headers) => {
                let mut r = plain(StatusCode::NO_CONTENT, "");
                r.headers_mut().extend(headers);
                r
            }
            None => plain(
                StatusCode::FORBIDDEN,
                "this origin may not read this server's answers (see --cors-origin)\n",
            ),
        });
    }
    let origin = req.headers().get(header::ORIGIN).cloned();
    req.extensions_mut().insert(Client(peer));
    let mut response = service.call(req).await?;
    if let Some(origin) = origin {
        let mut asked = hyper::HeaderMap::new();
        asked.insert(header::ORIGIN, origin);
        door.rules.cors(&asked, response.headers_mut());
    }
    Ok(response)
}

fn plain<B: Plain>(status: StatusCode, text: &str) -> Response<B> {
    let mut r = Response::new(B::plain(text));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(text.len()));
    if !text.is_empty() {
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    r
}

/// The connection slots of one server: [`Limits::max_connections`] for every door
/// together, [`Limits::max_connections_per_client`] per client address.
pub struct Slots {
    all: Arc<Semaphore>,
    per_client: Mutex<HashMap<IpAddr, usize>>,
    per_client_max: usize,
}

impl Slots {
    pub fn new(limits: &Limits) -> Slots {
        Slots {
            all: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            per_client: Mutex::default(),
            per_client_max: limits.max_connections_per_client.max(1),
        }
    }

    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.per_client.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for one more connection of `client`, or `None` when it has all its own.
    fn take_client(self: &Arc<Slots>, client: IpAddr) -> Option<ClientSlot> {
        let mut clients = self.clients();
        let n = clients.entry(client).or_insert(0);
        if *n >= self.per_client_max {
            return None;
        }
        *n += 1;
        Some(ClientSlot {
            slots: self.clone(),
            client,
        })
    }
}

/// One connection of a client, counted while it lives.
struct ClientSlot {
    slots: Arc<Slots>,
    client: IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut clients = self.slots.clients();
        if let Some(n) = clients.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                clients.remove(&self.client);
            }
        }
    }
}

/// The answer a hyper door's client gets when its address holds all its connections:
/// written as the connection is closed, so the client knows why.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\
Retry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 39\r\n\r\n\
too many connections from this address\n";

/// The accept loop every door shares: each connection accepted, closed at once when
/// its client holds all its own, else served by `handle` on a task of its own once a
/// slot of `wiring`'s is free (while every slot is held, a door holds at most the one
/// connection it accepted, unserved, and the rest wait in the listen backlog), until
/// the stop signal; then stops accepting and returns once every connection has ended
/// (the caller bounds how long it waits).
///
/// A door takes a slot only for a connection it has: a door that took one before
/// accepting would keep it from the other doors while it waits for a client, and with
/// as many doors as slots, one door's connection could take the slot another door's
/// client needs.
pub async fn accept<H, F>(listener: TcpListener, wiring: Wiring, door: &'static str, handle: H)
where
    H: Fn(TcpStream, SocketAddr, watch::Receiver<bool>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let Wiring {
        slots,
        mut stop,
        counts,
        ..
    } = wiring;
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and the like: wait a little rather than spin.
                    log::warn!("{door}: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let Some(client) = slots.take_client(peer.ip()) else {
            log::debug!("{door}: {peer} holds all its connections: closed");
            if door != "nfs" {
                // Best effort: a client whose socket buffer is full just sees the close.
                let _ = stream.try_write(TOO_MANY);
            }
            counts.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        counts.waiting_for_slot.fetch_add(1, Ordering::Relaxed);
        let permit: Option<OwnedSemaphorePermit> = tokio::select! {
            p = slots.all.clone().acquire_owned() => p.ok(),
            _ = stop.changed() => None,
        };
        counts.waiting_for_slot.fetch_sub(1, Ordering::Relaxed);
        let Some(permit) = permit else {
            break;
        };
        let _ = stream.set_nodelay(true);
        let open = Open::count(&counts);
        let connection = handle(stream, peer, stop.clone());
        tasks.spawn(async move {
            let _open = open;
            let _slots = (permit, client);
            connection.await;
        });
        // Reap finished connections so the set does not grow with every one served.
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// Connections of a server: open now, accepted since it started, refused because their
/// client held all its own, and the doors waiting for a slot.
#[derive(Debug, Default)]
pub struct Counts {
    pub open: AtomicUsize,
    pub accepted: AtomicUsize,
    pub refused: AtomicUsize,
    /// Doors holding an accepted connection that waits for a free slot (every slot
    /// held): a test sees it without giving it time to be served.
    pub waiting_for_slot: AtomicUsize,
}

/// One open connection, counted while it lives (every door's connections).
pub struct Open(Arc<Counts>);

impl Open {
    pub fn count(counts: &Arc<Counts>) -> Open {
        counts.open.fetch_add(1, Ordering::Relaxed);
        counts.accepted.fetch_add(1, Ordering::Relaxed);
        Open(counts.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A stream that fails with `TimedOut` once no byte moved for `timeout` while someone
/// waits on it: a client that stops reading a response (its window full) or sends
/// nothing more loses its connection instead of holding it forever.
pub struct Watchdog<S> {
    inner: S,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl<S> Watchdog<S> {
    pub fn new(inner: S, timeout: Duration) -> Watchdog<S> {
        Watchdog {
            inner,
            timeout,
            deadline: Box::pin(tokio::time::sleep(timeout)),
        }
    }

    /// Moves the deadline on after progress; when waiting, fails once it has passed.
    fn check<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                let next = Instant::now() + self.timeout;
                self.deadline.as_mut().reset(next);
                Poll::Ready(r)
            }
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no progress on the connection",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watchdog<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        this.check(cx, r)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watchdog<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.check(cx, r)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.check(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
