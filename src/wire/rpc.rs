//! ONC RPC (RFC 5531) as the NFS door speaks it: record marking over a byte stream
//! (§11), call headers, and replies. Sans-IO: the door's connection feeds records in
//! and writes replies out; what a call means is for its [`Programs`].

use super::xdr::{Garbage, Reader, Writer};

/// A call's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// What answers calls.
pub trait Programs {
    fn call(&self, call: &Call, args: &mut Reader<'_>, out: &mut Writer) -> Accept;
}

/// Bytes of a credential or verifier body taken (RFC 5531 caps them at 400).
const MAX_AUTH: usize = 400;

/// The fragment a record-marking header announces (RFC 5531 §11): its length, and
/// whether it is the record's last.
pub fn fragment(mark: u32) -> (usize, bool) {
    ((mark & !(1 << 31)) as usize, mark & (1 << 31) != 0)
}

/// The record-marking header of a one-fragment record of `len` bytes.
pub fn mark(len: usize) -> [u8; 4] {
    (len as u32 | 1 << 31).to_be_bytes()
}

/// Why a stream's records cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// A record (its fragments together) longer than the bound: the connection closes
    /// before reading it, so a hostile length costs nothing.
    TooLong(usize),
}

/// Reassembles records from fragments: [`Records::fragment`] for each fragment header
/// read, then the fragment's bytes to [`Records::take`]; a record is whole after its
/// last fragment.
#[derive(Debug)]
pub struct Records {
    record: Vec<u8>,
    max: usize,
}

impl Records {
    pub fn new(max: usize) -> Records {
        Records {
            record: Vec::new(),
            max,
        }
    }

    /// Takes a fragment header: how many bytes to read for it, and whether they end the
    /// record; an error if the record would pass the bound.
    pub fn fragment(&self, mark: u32) -> Result<(usize, bool), Framing> {
        let (len, last) = fragment(mark);
        let total = self.record.len().saturating_add(len);
        if total > self.max {
            return Err(Framing::TooLong(total));
        }
        Ok((len, last))
    }

    /// Room for the next `len` bytes of the record, to be read into.
    pub fn room(&mut self, len: usize) -> &mut [u8] {
        let start = self.record.len();
        self.record.resize(start + len, 0);
        &mut self.record[start..]
    }

    /// The record so far, whole once its last fragment was taken; the assembler starts
    /// a new one.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.record)
    }
}

/// Every whole record of `stream` (fragment headers and bytes back to back), and what
/// is left after the last one; an error for a record over `max` bytes. What a
/// connection does, over bytes in memory.
pub fn split(stream: &[u8], max: usize) -> Result<(Vec<Vec<u8>>, &[u8]), Framing> {
    let mut records = Records::new(max);
    let mut out = Vec::new();
    let mut rest = stream;
    let mut record_start = stream;
    loop {
        let Some((head, tail)) = rest.split_first_chunk::<4>() else {
            return Ok((out, record_start));
        };
        let (len, last) = records.fragment(u32::from_be_bytes(*head))?;
        let Some(bytes) = tail.get(..len) else {
            return Ok((out, record_start));
        };
        records.room(len).copy_from_slice(bytes);
        rest = &tail[len..];
        if last {
            out.push(records.take());
            record_start = rest;
        }
    }
}

/// Answers one call record; `None` when it is not a call at all (a connection then
/// closes: nothing in it can be trusted to be framed right).
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
        // Credentials and verifier: any flavour is taken (AUTH_SYS is a user id the
        // client states, no control), at most 400 bytes each.
        r.u32()?;
        r.opaque(MAX_AUTH)?;
        r.u32()?;
        r.opaque(MAX_AUTH)?;
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

/// The call header of a record, without answering it (what a door looks at before
/// deciding where to answer a call); `None` where [`answer`] would find no call.
pub fn call_of(record: &[u8]) -> Option<(Call, &[u8])> {
    let mut r = Reader::new(record);
    let xid = r.u32().ok()?;
    if r.u32().ok()? != 0 || r.u32().ok()? != 2 {
        return None;
    }
    let call = Call {
        xid,
        prog: r.u32().ok()?,
        vers: r.u32().ok()?,
        proc_: r.u32().ok()?,
    };
    r.u32().ok()?;
    r.opaque(MAX_AUTH).ok()?;
    r.u32().ok()?;
    r.opaque(MAX_AUTH).ok()?;
    Some((call, r.rest()))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl Programs for Echo {
        fn call(&self, call: &Call, args: &mut Reader<'_>, out: &mut Writer) -> Accept {
            match (call.prog, call.proc_) {
                (7, 0) => {
                    let Ok(name) = args.string(16) else {
                        return Accept::GarbageArgs;
                    };
                    out.opaque(name.as_bytes());
                    Accept::Success
                }
                (7, _) => Accept::ProcUnavail,
                _ => Accept::ProgUnavail,
            }
        }
    }

    fn call(xid: u32, prog: u32, proc_: u32, args: &[u8]) -> Vec<u8> {
        let mut w = Writer::default();
        for v in [xid, 0, 2, prog, 1, proc_, 1] {
            w.u32(v);
        }
        w.opaque(&[0; 20]); // AUTH_SYS body
        w.u32(0);
        w.opaque(&[]);
        w.buf.extend_from_slice(args);
        w.buf
    }

    #[test]
    fn calls_are_answered_and_non_calls_refused() {
        let mut args = Writer::default();
        args.opaque(b"abc");
        let reply = answer(&Echo, &call(9, 7, 0, &args.buf)).unwrap();
        let mut r = Reader::new(&reply);
        assert_eq!(
            [r.u32(), r.u32(), r.u32(), r.u32(), r.u32(), r.u32()],
            [Ok(9), Ok(1), Ok(0), Ok(0), Ok(0), Ok(0)]
        );
        assert_eq!(r.string(16), Ok("abc"));
        assert!(
            answer(&Echo, &call(9, 7, 0, b"\0\0")).is_some(),
            "garbage args answered"
        );
        assert!(answer(&Echo, &call(9, 8, 0, &[])).is_some());
        assert_eq!(answer(&Echo, b"\0\0\0\x01\0\0\0\x01"), None, "a reply");
        assert_eq!(answer(&Echo, b"\0\0"), None);
        let record = call(5, 7, 3, b"xyzw");
        let (c, rest) = call_of(&record).unwrap();
        assert_eq!((c.xid, c.prog, c.proc_, rest), (5, 7, 3, &b"xyzw"[..]));
    }

    #[test]
    fn records_are_reassembled_within_their_bound() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&3u32.to_be_bytes()); // a first fragment of 3
        stream.extend_from_slice(b"abc");
        stream.extend_from_slice(&mark(2));
        stream.extend_from_slice(b"de");
        stream.extend_from_slice(&mark(1));
        stream.extend_from_slice(b"f");
        stream.extend_from_slice(&mark(4));
        stream.extend_from_slice(b"gh"); // cut short
        let (records, rest) = split(&stream, 16).unwrap();
        assert_eq!(records, [b"abcde".to_vec(), b"f".to_vec()]);
        assert_eq!(rest, &stream[stream.len() - 6..]);
        assert_eq!(split(&stream, 4), Err(Framing::TooLong(5)));
        let huge = (u32::MAX).to_be_bytes();
        assert!(split(&huge, 1 << 20).is_err(), "a hostile length");
    }
}
