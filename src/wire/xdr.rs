//! XDR (RFC 4506), the encoding of every ONC RPC message: big-endian 4-byte units,
//! opaque data and strings padded to a multiple of 4. Only what a read-only NFSv3
//! server reads and writes. Decoding never trusts a length from the wire: each is
//! checked against the bytes left and a caller's bound before anything is taken.

/// A call whose arguments do not decode (RPC's `GARBAGE_ARGS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Garbage(pub &'static str);

/// Reads XDR items from a received message.
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, at: 0 }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Garbage> {
        let end = self.at.checked_add(n).ok_or(Garbage(what))?;
        let bytes = self.buf.get(self.at..end).ok_or(Garbage(what))?;
        self.at = end;
        Ok(bytes)
    }

    pub fn u32(&mut self) -> Result<u32, Garbage> {
        let b = self.take(4, "a short message")?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, Garbage> {
        let hi = self.u32()?;
        let lo = self.u32()?;
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }

    pub fn bool(&mut self) -> Result<bool, Garbage> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Garbage("a boolean neither 0 nor 1")),
        }
    }

    /// Variable-length opaque data of at most `max` bytes.
    pub fn opaque(&mut self, max: usize) -> Result<&'a [u8], Garbage> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(Garbage("opaque data longer than allowed"));
        }
        let bytes = self.take(len, "opaque data past the message's end")?;
        self.take(pad(len), "padding past the message's end")?;
        Ok(bytes)
    }

    /// Fixed-length opaque data.
    pub fn fixed(&mut self, len: usize) -> Result<&'a [u8], Garbage> {
        let bytes = self.take(len, "fixed data past the message's end")?;
        self.take(pad(len), "padding past the message's end")?;
        Ok(bytes)
    }

    /// What is left to read.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.at..).unwrap_or_default()
    }

    /// A string of at most `max` bytes, which must be UTF-8 (the tree's names are).
    pub fn string(&mut self, max: usize) -> Result<&'a str, Garbage> {
        std::str::from_utf8(self.opaque(max)?).map_err(|_| Garbage("a name that is not UTF-8"))
    }
}

/// Padding after `len` bytes of opaque data.
pub fn pad(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Bytes `len` bytes of opaque data take on the wire, with their length and padding.
pub fn opaque_size(len: usize) -> usize {
    4 + len + pad(len)
}

/// Appends XDR items to a reply.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn bool(&mut self, v: bool) {
        self.u32(u32::from(v));
    }

    pub fn opaque(&mut self, bytes: &[u8]) {
        self.u32(bytes.len() as u32);
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(&[0; 3][..pad(bytes.len())]);
    }

    pub fn fixed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(&[0; 3][..pad(bytes.len())]);
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_padding() {
        let mut w = Writer::default();
        w.u32(7);
        w.u64(0x0102_0304_0506_0708);
        w.opaque(b"abcde");
        w.bool(true);
        assert_eq!(w.len(), 4 + 8 + 4 + 8 + 4);
        let mut r = Reader::new(&w.buf);
        assert_eq!(r.u32(), Ok(7));
        assert_eq!(r.u64(), Ok(0x0102_0304_0506_0708));
        assert_eq!(r.string(16), Ok("abcde"));
        assert_eq!(r.bool(), Ok(true));
        assert!(r.u32().is_err(), "nothing left");
    }

    #[test]
    fn lengths_from_the_wire_are_checked() {
        let mut w = Writer::default();
        w.u32(u32::MAX);
        assert!(
            Reader::new(&w.buf).opaque(usize::MAX).is_err(),
            "past the end"
        );
        let mut w = Writer::default();
        w.opaque(b"0123456789");
        assert!(
            Reader::new(&w.buf).opaque(4).is_err(),
            "longer than allowed"
        );
        let mut w = Writer::default();
        w.u32(2);
        assert!(Reader::new(&w.buf).bool().is_err());
    }
}
