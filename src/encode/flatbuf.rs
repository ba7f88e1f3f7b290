//! A small FlatBuffers builder, enough for Arrow IPC metadata ([`super::arrow`]): tables
//! of scalars and offsets, strings, vectors of offsets and vectors of structs.
//!
//! Written here rather than taken from the `flatbuffers` crate because Arrow's metadata
//! is a few dozen small tables, and a writer of `cells.arrow` must lay its bytes out
//! exactly the same way for the same table every time (the file's size and every
//! offset are shown before a value is read). This builder is deterministic by
//! construction: it writes every field it is given (defaults included, so a value never
//! changes a table's shape), never shares vtables, and aligns everything from the end.
//!
//! Like the reference builder it writes back to front: an object is written before the
//! objects that point at it, and its place is its distance from the buffer's end
//! ([`Off`]). The bytes are kept reversed while building, so prepending is a push;
//! [`Builder::finish`] pads the buffer to a multiple of 8 and turns it around, so an
//! object aligned from the end is aligned from the start as well.

/// Where an object is: its distance from the end of the finished buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Off(usize);

/// A value of one table field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Val {
    Bool(bool),
    U8(u8),
    I16(i16),
    I32(i32),
    I64(i64),
    /// An offset to a table, string or vector already written.
    Off(Off),
}

/// A buffer under construction (see the module's doc).
#[derive(Debug, Default)]
pub struct Builder {
    /// The buffer so far, last byte first.
    rev: Vec<u8>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Zero bytes so that after `additional` more bytes the length is a multiple of
    /// `align` (a power of two).
    fn prep(&mut self, align: usize, additional: usize) {
        let over = (self.rev.len() + additional) % align;
        if over != 0 {
            self.rev.resize(self.rev.len() + align - over, 0);
        }
    }

    /// Prepends `bytes`, in their order.
    fn put(&mut self, bytes: &[u8]) {
        self.rev.extend(bytes.iter().rev());
    }

    /// Prepends an unsigned offset to `target`: from where it is to where `target` is,
    /// always forward, since `target` was written before.
    fn put_offset(&mut self, target: Off) {
        self.prep(4, 4);
        let here = self.rev.len() + 4;
        self.put(&(here.saturating_sub(target.0) as u32).to_le_bytes());
    }

    fn put_len(&mut self, n: usize) {
        self.put(&(n as u32).to_le_bytes());
    }

    /// A string: its length, its UTF-8 bytes and a terminating zero.
    pub fn string(&mut self, s: &str) -> Off {
        self.prep(4, s.len() + 1);
        self.put(&[0]);
        self.put(s.as_bytes());
        self.put_len(s.len());
        Off(self.rev.len())
    }

    /// A vector of offsets to objects already written, in this order.
    pub fn offsets(&mut self, items: &[Off]) -> Off {
        self.prep(4, 4 * items.len());
        for &item in items.iter().rev() {
            self.put_offset(item);
        }
        self.put_len(items.len());
        Off(self.rev.len())
    }

    /// A vector of `count` structs, given as their bytes back to back (each struct as
    /// FlatBuffers lays it out, padding included), the vector's data aligned to `align`.
    pub fn structs(&mut self, bytes: &[u8], count: usize, align: usize) -> Off {
        self.prep(align.max(4), bytes.len());
        self.put(bytes);
        self.put_len(count);
        Off(self.rev.len())
    }

    /// A table with `fields` as (slot, value), in slot order or not; a slot not given
    /// is absent (its vtable entry 0). Its vtable is written right before it.
    pub fn table(&mut self, fields: &[(usize, Val)]) -> Off {
        let start = self.rev.len();
        let mut at = Vec::with_capacity(fields.len());
        // Back to front, so the fields lie in the order given.
        for &(slot, val) in fields.iter().rev() {
            match val {
                Val::Off(target) => self.put_offset(target),
                Val::Bool(v) => self.put(&[u8::from(v)]),
                Val::U8(v) => self.put(&[v]),
                Val::I16(v) => {
                    self.prep(2, 2);
                    self.put(&v.to_le_bytes());
                }
                Val::I32(v) => {
                    self.prep(4, 4);
                    self.put(&v.to_le_bytes());
                }
                Val::I64(v) => {
                    self.prep(8, 8);
                    self.put(&v.to_le_bytes());
                }
            }
            at.push((slot, self.rev.len()));
        }
        let slots = fields.iter().map(|&(s, _)| s + 1).max().unwrap_or(0);
        let vtable_size = 4 + 2 * slots;
        // The table starts with the signed distance back to its vtable, which is
        // written right before it: exactly the vtable's size.
        self.prep(4, 4);
        self.put(&(vtable_size as i32).to_le_bytes());
        let table = self.rev.len();
        let mut vtable = vec![0u16; 2 + slots];
        vtable[0] = vtable_size as u16;
        vtable[1] = (table - start) as u16;
        for (slot, pos) in at {
            vtable[2 + slot] = (table - pos) as u16;
        }
        let bytes: Vec<u8> = vtable.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.put(&bytes);
        Off(table)
    }

    /// The finished buffer with `root` as its root table, its length a multiple of 8;
    /// `None` if it is over 2 GiB (FlatBuffers' limit, and Arrow's, whose lengths of
    /// metadata are `i32`), where an offset written above may have been cut.
    pub fn finish(mut self, root: Off) -> Option<Vec<u8>> {
        self.prep(8, 4);
        self.put_offset(root);
        if self.rev.len() > i32::MAX as usize {
            return None;
        }
        self.rev.reverse();
        Some(self.rev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16_at(b: &[u8], at: usize) -> usize {
        u16::from_le_bytes([b[at], b[at + 1]]) as usize
    }
    fn u32_at(b: &[u8], at: usize) -> usize {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
    }

    /// Where field `slot` of the table at `table` is, as a reader finds it.
    fn field(b: &[u8], table: usize, slot: usize) -> Option<usize> {
        let soff = i32::from_le_bytes(b[table..table + 4].try_into().unwrap());
        let vtable = (table as i64 - soff as i64) as usize;
        let size = u16_at(b, vtable);
        if 4 + 2 * slot >= size {
            return None;
        }
        match u16_at(b, vtable + 4 + 2 * slot) {
            0 => None,
            o => Some(table + o),
        }
    }

    fn deref(b: &[u8], at: usize) -> usize {
        at + u32_at(b, at)
    }

    fn string(b: &[u8], at: usize) -> &str {
        let n = u32_at(b, at);
        assert_eq!(b[at + 4 + n], 0, "terminated");
        std::str::from_utf8(&b[at + 4..at + 4 + n]).unwrap()
    }

    #[test]
    fn a_table_reads_back_with_every_field_aligned() {
        let mut b = Builder::new();
        let name = b.string("héllo");
        let s1 = b.string("a");
        let s2 = b.string("");
        let list = b.offsets(&[s1, s2]);
        let mut structs = Vec::new();
        structs.extend(7i64.to_le_bytes());
        structs.extend((-1i64).to_le_bytes());
        let st = b.structs(&structs, 1, 8);
        let root = b.table(&[
            (0, Val::I16(4)),
            (1, Val::Bool(true)),
            (2, Val::Off(name)),
            (3, Val::I64(-5)),
            (5, Val::Off(list)),
            (6, Val::Off(st)),
            (7, Val::U8(9)),
            (8, Val::I32(0)),
        ]);
        let buf = b.finish(root).unwrap();
        assert_eq!(buf.len() % 8, 0);
        let t = deref(&buf, 0);
        assert_eq!(t % 4, 0);
        let f = |slot| field(&buf, t, slot);
        assert_eq!(f(0).map(|a| a % 2), Some(0));
        assert_eq!(u16_at(&buf, f(0).unwrap()), 4);
        assert_eq!(buf[f(1).unwrap()], 1);
        assert_eq!(string(&buf, deref(&buf, f(2).unwrap())), "héllo");
        let at = f(3).unwrap();
        assert_eq!(at % 8, 0, "an i64 is 8-aligned");
        assert_eq!(i64::from_le_bytes(buf[at..at + 8].try_into().unwrap()), -5);
        assert_eq!(f(4), None);
        let v = deref(&buf, f(5).unwrap());
        assert_eq!(u32_at(&buf, v), 2);
        assert_eq!(string(&buf, deref(&buf, v + 4)), "a");
        assert_eq!(string(&buf, deref(&buf, v + 8)), "");
        let v = deref(&buf, f(6).unwrap());
        assert_eq!(u32_at(&buf, v), 1);
        assert_eq!((v + 4) % 8, 0, "struct data is 8-aligned");
        assert_eq!(&buf[v + 4..v + 20], &structs[..]);
        assert_eq!(buf[f(7).unwrap()], 9);
        // A default value is written all the same: shapes never depend on values.
        assert!(f(8).is_some());
        assert_eq!(f(9), None);
    }

    #[test]
    fn the_same_fields_make_the_same_bytes_whatever_the_values() {
        let make = |n: i64, flag: bool| {
            let mut b = Builder::new();
            let s = b.structs(&n.to_le_bytes(), 1, 8);
            let t = b.table(&[(0, Val::I64(n)), (1, Val::Bool(flag)), (2, Val::Off(s))]);
            b.finish(t).unwrap()
        };
        assert_eq!(make(0, false).len(), make(i64::MIN, true).len());
        assert_eq!(make(3, true), make(3, true));
        // An empty table: its vtable holds only the two sizes.
        let mut b = Builder::new();
        let t = b.table(&[]);
        let buf = b.finish(t).unwrap();
        let t = deref(&buf, 0);
        let vt = t - 4;
        assert_eq!((u16_at(&buf, vt), u16_at(&buf, vt + 2)), (4, 4));
    }
}
