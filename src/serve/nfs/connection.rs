//! The NFS door's connections: ONC RPC records ([`crate::wire::rpc`]) read from a TCP
//! stream one at a time (a record longer than [`MAX_RECORD`] closes the connection, so a
//! hostile length costs nothing), at most [`IN_FLIGHT`] calls of a connection answered
//! at once on the blocking pool (NFS clients send many READs without waiting), and
//! replies written as they finish. So a connection holds at most `IN_FLIGHT` replies of
//! at most `rtmax` bytes, and a client that stops reading its replies or goes quiet for
//! the idle timeout loses its connection.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::serve::Limits;
use crate::wire::rpc::{self, answer, Programs, Records};

/// The longest call record taken: calls of a read-only server are small, and a WRITE
/// (refused) carries at most the `wtmax` the server announces.
pub const MAX_RECORD: usize = super::WTMAX as usize + 4096;
/// Calls of one connection running at once.
pub const IN_FLIGHT: usize = 8;

/// Serves `programs` on every connection `listener` accepts, at most
/// `limits.max_connections` at once, until `stop` turns true; then stops accepting,
/// lets each connection finish the calls it runs, and returns once all are closed.
pub async fn serve(
    listener: TcpListener,
    programs: Arc<dyn Programs + Send + Sync>,
    limits: Limits,
    stop: watch::Receiver<bool>,
    counts: Arc<crate::serve::conn::Counts>,
) {
    let shared = Arc::new(limits.clone());
    let handle = move |stream, peer, stop| {
        let (programs, limits) = (programs.clone(), shared.clone());
        async move {
            if let Err(e) = connection(stream, programs, &limits, stop).await {
                log::debug!("nfs: connection from {peer}: {e}");
            }
        }
    };
    crate::serve::conn::accept(listener, &limits, stop, "nfs", counts, handle).await;
}

async fn connection(
    stream: TcpStream,
    programs: Arc<dyn Programs + Send + Sync>,
    limits: &Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(IN_FLIGHT);
    let idle = limits.idle_timeout;
    let header_timeout = limits.header_timeout;
    let reader = async move {
        let calls = Arc::new(Semaphore::new(IN_FLIGHT));
        loop {
            // Waiting for a call: the idle timeout; within one, the header timeout.
            let first = tokio::select! {
                r = tokio::time::timeout(idle, rd.read_u32()) => r,
                _ = stop.changed() => return Ok(()),
            };
            let record = match first {
                Err(_) => return Ok(()), // idle: the client reconnects when it needs
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Ok(Err(e)) => return Err(e),
                Ok(Ok(mark)) => {
                    match tokio::time::timeout(header_timeout, read_record(&mut rd, mark)).await {
                        Ok(r) => r?,
                        Err(_) => return Err(timed_out("a call's record")),
                    }
                }
            };
            let Ok(permit) = calls.clone().acquire_owned().await else {
                return Ok(());
            };
            let programs = programs.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let reply = tokio::task::spawn_blocking(move || answer(&*programs, &record)).await;
                match reply {
                    Ok(Some(reply)) => {
                        let _ = tx.send(reply).await;
                    }
                    Ok(None) => {
                        log::debug!("nfs: a record that is no RPC call: closing");
                        let _ = tx.send(Vec::new()).await;
                    }
                    Err(e) => log::error!("nfs: a call's task failed: {e}"),
                }
                drop(permit);
            });
        }
    };
    let writer = async move {
        while let Some(reply) = rx.recv().await {
            if reply.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a record that is no RPC call",
                ));
            }
            let mark = rpc::mark(reply.len());
            let write = async {
                wr.write_all(&mark).await?;
                wr.write_all(&reply).await
            };
            match tokio::time::timeout(idle, write).await {
                Ok(r) => r?,
                Err(_) => return Err(timed_out("a reply the client does not read")),
            }
        }
        Ok(())
    };
    tokio::pin!(reader, writer);
    tokio::select! {
        r = &mut writer => r,
        r = &mut reader => {
            // No more calls: write the replies of those running, then close.
            let w = writer.await;
            r.and(w)
        }
    }
}

/// The rest of a record whose first fragment's mark is `mark`.
async fn read_record(
    rd: &mut tokio::net::tcp::OwnedReadHalf,
    mut mark: u32,
) -> std::io::Result<Vec<u8>> {
    let mut records = Records::new(MAX_RECORD);
    loop {
        let (len, last) = records.fragment(mark).map_err(|rpc::Framing::TooLong(n)| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a record of {n} bytes, over {MAX_RECORD}"),
            )
        })?;
        rd.read_exact(records.room(len)).await?;
        if last {
            return Ok(records.take());
        }
        mark = rd.read_u32().await?;
    }
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{what}: timed out"))
}
