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

use super::door::{NfsDoor, Sizes, RTMAX, WTMAX};
use crate::serve::budget::{Budget, Share};
use crate::serve::conn::Limits;
use crate::serve::conn::Wiring;
use crate::serve::sizing::Sizing;
use crate::view::Ino;
use crate::wire::rpc::{self, answer, Records};
use crate::wire::xdr::Reader;

/// The longest call record taken: calls of a read-only server are small, and a WRITE
/// (refused) carries at most the `wtmax` the server announces.
pub const MAX_RECORD: usize = WTMAX as usize + 4096;
/// Calls of one connection running at once.
pub const IN_FLIGHT: usize = 8;

/// Serves `door` on every connection `listener` accepts, within `wiring`'s bounds, until
/// its stop signal; then stops accepting, lets each connection finish the calls it
/// runs, and returns once all are closed. A GETATTR of a text file not sized yet has it
/// sized in `sizing` first (the call waits without a thread; `door` must read the
/// outcome from the same pool, [`NfsDoor::with_sizes`]); a READ's reply takes its bytes
/// from `budget` until it is written.
pub async fn serve(
    listener: TcpListener,
    door: Arc<NfsDoor>,
    sizing: Arc<Sizing>,
    budget: Arc<Budget>,
    wiring: Wiring,
) {
    let shared = Arc::new(wiring.limits.clone());
    let handle = move |stream, peer, stop| {
        let call = Calls {
            door: door.clone(),
            sizing: sizing.clone(),
            budget: budget.clone(),
        };
        let limits = shared.clone();
        async move {
            if let Err(e) = connection(stream, call, &limits, stop).await {
                log::debug!("nfs: connection from {peer}: {e}");
            }
        }
    };
    crate::serve::conn::accept(listener, wiring, "nfs", handle).await;
}

/// What answers a connection's calls.
#[derive(Clone)]
struct Calls {
    door: Arc<NfsDoor>,
    sizing: Arc<Sizing>,
    budget: Arc<Budget>,
}

/// A reply, with the share of the budget its bytes hold until written.
type Reply = (Vec<u8>, Option<Share>);

impl Calls {
    /// The reply to one call record; `None` when it is no RPC call.
    async fn answer(&self, record: Vec<u8>) -> Option<Reply> {
        let record = Arc::new(record);
        let share = match rpc::call_of(&record) {
            Some((call, args)) if (call.prog, call.vers, call.proc_) == (100_003, 3, 6) => {
                // READ: its reply's bytes (the count it asks, at most RTMAX).
                let count = read_count(args).min(RTMAX) as usize;
                self.budget.take(count).await
            }
            Some((call, _)) if (call.prog, call.vers, call.proc_) == (100_003, 3, 1) => {
                let (door, r) = (self.door.clone(), record.clone());
                if let Ok(Some(ino)) = tokio::task::spawn_blocking(move || door.to_size(&r)).await {
                    // Its outcome is the door's to read; a late one answers JUKEBOX.
                    let _ = self.sizing.size(ino).await;
                }
                None
            }
            _ => None,
        };
        let door = self.door.clone();
        let reply = tokio::task::spawn_blocking(move || answer(&*door, &record)).await;
        match reply {
            Ok(Some(reply)) => Some((reply, share)),
            Ok(None) => None,
            Err(e) => {
                log::error!("nfs: a call's task failed: {e}");
                Some((Vec::new(), None))
            }
        }
    }
}

/// The byte count a READ's arguments ask for (after the handle and offset); 0 when
/// they do not decode (the call then fails on its own).
fn read_count(args: &[u8]) -> u32 {
    let mut r = Reader::new(args);
    r.opaque(64)
        .and_then(|_| r.u64())
        .and_then(|_| r.u32())
        .unwrap_or(0)
}

impl Sizes for Sizing {
    fn outcome(&self, ino: Ino) -> Option<Result<u64, crate::error::Error>> {
        Sizing::outcome(self, ino)
    }
}

async fn connection(
    stream: TcpStream,
    calls: Calls,
    limits: &Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Reply>(IN_FLIGHT);
    let idle = limits.idle_timeout;
    let header_timeout = limits.header_timeout;
    let reader = async move {
        let running = Arc::new(Semaphore::new(IN_FLIGHT));
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
            let Ok(permit) = running.clone().acquire_owned().await else {
                return Ok(());
            };
            let calls = calls.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                match calls.answer(record).await {
                    Some(reply) if !reply.0.is_empty() => {
                        let _ = tx.send(reply).await;
                    }
                    Some(_) => {}
                    None => {
                        log::debug!("nfs: a record that is no RPC call: closing");
                        let _ = tx.send((Vec::new(), None)).await;
                    }
                }
                drop(permit);
            });
        }
    };
    let writer = async move {
        while let Some((reply, _share)) = rx.recv().await {
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
