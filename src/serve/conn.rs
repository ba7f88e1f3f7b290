//! Connections of the hyper-based faces (HTTP, the S3 API, WebDAV): accepted within a
//! bound, timed out when a client stops sending or reading, and closed gracefully when
//! the server stops. A slow or hostile client costs one connection slot and a few
//! kilobytes, never a thread, and never holds more than one body chunk in memory
//! (hyper asks the body for its next chunk only once the socket took the last one).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::{Instant, Sleep};

/// What one server allows its clients.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once (per face); more wait in the listen backlog.
    pub max_connections: usize,
    /// Bytes of a request's head (request line and headers); more answers 431.
    pub header_bytes: usize,
    /// Time a client has to send a request's head once its connection is open or idle.
    pub header_timeout: Duration,
    /// Time without a byte moving either way (a client that stops reading a body, or
    /// stays idle between requests) before the connection is closed.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 1024,
            header_bytes: 16 << 10,
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Serves `service` on every connection `listener` accepts until `stop` turns true;
/// then stops accepting, lets each connection finish the request it is in, and returns
/// once all are closed (the caller bounds how long it waits).
pub async fn serve<S, B>(
    listener: TcpListener,
    service: S,
    limits: Limits,
    stop: watch::Receiver<bool>,
    face: &'static str,
    counts: Arc<Counts>,
) where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let idle = limits.idle_timeout;
    let header_timeout = limits.header_timeout;
    let header_bytes = limits.header_bytes;
    accept(
        listener,
        &limits,
        stop,
        face,
        counts,
        move |stream, peer, mut stop| {
            let service = service.clone();
            async move {
                let io = TokioIo::new(Watchdog::new(stream, idle));
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .max_buf_size(header_bytes.max(8192));
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
                    log::debug!("{face}: connection from {peer}: {e}");
                }
            }
        },
    )
    .await;
}

/// The accept loop every face shares: at most `limits.max_connections` connections at
/// once (more wait in the listen backlog), each counted in `counts` and served by
/// `handle` on a task of its own, until `stop` turns true; then stops accepting and
/// returns once every connection has ended (the caller bounds how long it waits).
pub async fn accept<H, F>(
    listener: TcpListener,
    limits: &Limits,
    mut stop: watch::Receiver<bool>,
    face: &'static str,
    counts: Arc<Counts>,
    handle: H,
) where
    H: Fn(TcpStream, std::net::SocketAddr, watch::Receiver<bool>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = stop.changed() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and the like: wait a little rather than spin.
                    log::warn!("{face}: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let _ = stream.set_nodelay(true);
        let open = Open::count(&counts);
        let connection = handle(stream, peer, stop.clone());
        tasks.spawn(async move {
            let _open = open;
            let _permit = permit;
            connection.await;
        });
        // Reap finished connections so the set does not grow with every one served.
        while tasks.try_join_next().is_some() {}
    }
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// Connections of a server: open now, and accepted since it started.
#[derive(Debug, Default)]
pub struct Counts {
    pub open: AtomicUsize,
    pub accepted: AtomicUsize,
}

/// One open connection, counted while it lives (every face's connections).
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

/// A socket that fails with `TimedOut` once no byte moved for `timeout` while someone
/// waits on it: a client that stops reading a response (its window full) or sends
/// nothing more loses its connection instead of holding it forever.
pub struct Watchdog {
    inner: TcpStream,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl Watchdog {
    pub fn new(inner: TcpStream, timeout: Duration) -> Watchdog {
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

impl AsyncRead for Watchdog {
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

impl AsyncWrite for Watchdog {
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
