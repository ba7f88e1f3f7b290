//! ONC RPC (RFC 5531) over TCP for the NFS face: record marking, call headers, replies,
//! and the connections themselves. A connection is read one record at a time (a record
//! longer than [`MAX_RECORD`] closes it, so a hostile length costs nothing), runs at
//! most [`IN_FLIGHT`] calls at once on the blocking pool (NFS clients send many READs
//! without waiting), and writes replies as they finish. So a connection holds at most
//! `IN_FLIGHT` replies of at most `rtmax` bytes, and a client that stops reading its
//! replies or goes quiet for the idle timeout loses its connection.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};

use super::xdr::{Garbage, Reader, Writer};
use crate::serve::Limits;

/// The longest call record taken: calls of a read-only server are small, and a WRITE
/// (refused) carries at most the `wtmax` the server announces.
pub const MAX_RECORD: usize = super::WTMAX as usize + 4096;
/// Calls of one connection running at once.
pub const IN_FLIGHT: usize = 8;

/// An RPC call's header.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
}

/// How a call was taken (RFC 5531 `accept_stat`); `Success` results are in the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    Success,
    ProgUnavail,
    ProgMismatch { low: u32, high: u32 },
    ProcUnavail,
    GarbageArgs,
}

/// What answers the calls of a connection (on the blocking pool: it may read the tree).
pub trait Programs: Send + Sync + 'static {
    fn call(&self, call: &Call, args: &mut Reader<'_>, out: &mut Writer) -> Accept;
}

/// Answers one call record; `None` when it is not a call at all (the connection is
/// then closed: nothing in it can be trusted to be framed right).
pub fn answer(programs: &dyn Programs, record: &[u8]) -> Option<Vec<u8>> {
    let mut r = Reader::new(record);
    let xid = r.u32().ok()?;
    if r.u32().ok()? != 0 {
        return None; // a REPLY sent to a server
    }
    let mut out = Writer::default();
    out.u32(xid);
    out.u32(1); // REPLY
    let rpcvers = r.u32().ok()?;
    if rpcvers != 2 {
        out.u32(1); // MSG_DENIED
        out.u32(0); // RPC_MISMATCH
        out.u32(2);
        out.u32(2);
        return Some(out.buf);
    }
    let header = (|| -> Result<Call, Garbage> {
        let call = Call {
            xid,
            prog: r.u32()?,
            vers: r.u32()?,
            proc_: r.u32()?,
        };
        // Credentials and verifier: any flavour is taken (see the module doc of
        // `serve::nfs`: AUTH_SYS is no control), at most 400 bytes each.
        r.u32()?;
        r.opaque(400)?;
        r.u32()?;
        r.opaque(400)?;
        Ok(call)
    })();
    let Ok(call) = header else {
        return None;
    };
    out.u32(0); // MSG_ACCEPTED
    out.u32(0); // verifier: AUTH_NONE
    out.u32(0);
    let mut results = Writer::default();
    let accept = programs.call(&call, &mut r, &mut results);
    match accept {
        Accept::Success => {
            out.u32(0);
            out.buf.extend_from_slice(&results.buf);
        }
        Accept::ProgUnavail => out.u32(1),
        Accept::ProgMismatch { low, high } => {
            out.u32(2);
            out.u32(low);
            out.u32(high);
        }
        Accept::ProcUnavail => out.u32(3),
        Accept::GarbageArgs => out.u32(4),
    }
    Some(out.buf)
}

/// Serves `programs` on every connection `listener` accepts, at most
/// `limits.max_connections` at once, until `stop` turns true; then stops accepting,
/// lets each connection finish the calls it runs, and returns once all are closed.
pub async fn serve(
    listener: TcpListener,
    programs: Arc<dyn Programs>,
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
    programs: Arc<dyn Programs>,
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
            let mark = (reply.len() as u32 | 1 << 31).to_be_bytes();
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
    let mut record = Vec::new();
    loop {
        let len = (mark & !(1 << 31)) as usize;
        if record.len() + len > MAX_RECORD {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a record longer than {MAX_RECORD} bytes"),
            ));
        }
        let start = record.len();
        record.resize(start + len, 0);
        rd.read_exact(&mut record[start..]).await?;
        if mark & 1 << 31 != 0 {
            return Ok(record);
        }
        mark = rd.read_u32().await?;
    }
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{what}: timed out"))
}
