//! The Thrift compact protocol, write side only: the encoding Parquet spells its footer
//! (`FileMetaData`) and its page headers in. Only what a writer of those needs: structs
//! with their field headers (field-id deltas, the long form past a delta of 15),
//! booleans folded into the field header, bytes (i8) as they are, zigzag varints for
//! i16/i32/i64, binary and strings behind a varint length, lists (the short header
//! below 15 elements), nested structs, the stop byte. No messages, maps, sets or
//! doubles: Parquet's metadata has none that this crate writes.
//!
//! A struct is written as its fields, in increasing field-id order, then the stop byte:
//! [`Writer::finish`] for the outermost one, [`Writer::field_struct`] and
//! [`Writer::elem_struct`] for nested ones (each keeps its own last field id).

/// A compact-protocol element type (the low nibble of a field header or of a list
/// header). Booleans are not here: a boolean field is its header
/// ([`Writer::field_bool`]); lists of booleans are not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    I8 = 3,
    I16 = 4,
    I32 = 5,
    I64 = 6,
    Binary = 8,
    List = 9,
    Struct = 12,
}

const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const STOP: u8 = 0;

/// Writes one outermost struct; [`Writer::finish`] ends it and gives its bytes.
#[derive(Debug, Default)]
pub struct Writer {
    out: Vec<u8>,
    /// The last field id written in the struct being written.
    last: i16,
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// A field header: the delta from the last field id in the high nibble where it
    /// is 1..=15, else the type alone and the id as a zigzag varint.
    fn header(&mut self, id: i16, ty: u8) {
        let delta = i32::from(id) - i32::from(self.last);
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | ty);
        } else {
            self.out.push(ty);
            self.varint(zigzag(i64::from(id)));
        }
        self.last = id;
    }

    pub fn field_bool(&mut self, id: i16, v: bool) {
        self.header(id, if v { BOOL_TRUE } else { BOOL_FALSE });
    }

    /// An i8 field: its one byte as it is (the compact protocol's `byte`, no varint).
    pub fn field_i8(&mut self, id: i16, v: i8) {
        self.header(id, Type::I8 as u8);
        self.out.push(v as u8);
    }

    pub fn field_i16(&mut self, id: i16, v: i16) {
        self.header(id, Type::I16 as u8);
        self.elem_i64(v.into());
    }

    pub fn field_i32(&mut self, id: i16, v: i32) {
        self.header(id, Type::I32 as u8);
        self.elem_i64(v.into());
    }

    pub fn field_i64(&mut self, id: i16, v: i64) {
        self.header(id, Type::I64 as u8);
        self.elem_i64(v);
    }

    pub fn field_binary(&mut self, id: i16, v: &[u8]) {
        self.header(id, Type::Binary as u8);
        self.elem_binary(v);
    }

    pub fn field_string(&mut self, id: i16, v: &str) {
        self.field_binary(id, v.as_bytes());
    }

    /// A struct field: `body` writes its fields, then the stop byte ends it.
    pub fn field_struct(&mut self, id: i16, body: impl FnOnce(&mut Writer)) {
        self.header(id, Type::Struct as u8);
        self.elem_struct(body);
    }

    /// A list field of `items`, each written by `each` with an `elem_*` call of type
    /// `elem`.
    pub fn field_list<T>(
        &mut self,
        id: i16,
        elem: Type,
        items: &[T],
        mut each: impl FnMut(&mut Writer, &T),
    ) {
        self.header(id, Type::List as u8);
        let n = items.len();
        if n < 15 {
            self.out.push(((n as u8) << 4) | elem as u8);
        } else {
            self.out.push(0xf0 | elem as u8);
            self.varint(n as u64);
        }
        for item in items {
            each(self, item);
        }
    }

    /// A list element (or a field's value) of type i16, i32 or i64: all three are the
    /// zigzag varint of the value.
    pub fn elem_i64(&mut self, v: i64) {
        self.varint(zigzag(v));
    }

    pub fn elem_binary(&mut self, v: &[u8]) {
        self.varint(v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// A struct as a list element: its own field ids start again from 0.
    pub fn elem_struct(&mut self, body: impl FnOnce(&mut Writer)) {
        let outer = std::mem::replace(&mut self.last, 0);
        body(self);
        self.out.push(STOP);
        self.last = outer;
    }

    /// Ends the outermost struct with its stop byte and gives its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(STOP);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::new();
        f(&mut w);
        w.finish()
    }

    #[test]
    fn an_empty_struct_is_its_stop_byte() {
        assert_eq!(one(|_| {}), [0x00]);
    }

    #[test]
    fn integers_are_zigzag_varints_behind_a_delta_header() {
        // i32 field 1 = 0: header 0x15, value 0.
        assert_eq!(one(|w| w.field_i32(1, 0)), [0x15, 0x00, 0x00]);
        // -1 -> 1, 1 -> 2, -2 -> 3, 63 -> 126, -64 -> 127, 64 -> 128 = 0x80 0x01.
        assert_eq!(one(|w| w.field_i32(1, -1)), [0x15, 0x01, 0x00]);
        assert_eq!(one(|w| w.field_i32(1, 1)), [0x15, 0x02, 0x00]);
        assert_eq!(one(|w| w.field_i32(1, -2)), [0x15, 0x03, 0x00]);
        assert_eq!(one(|w| w.field_i32(1, 63)), [0x15, 0x7e, 0x00]);
        assert_eq!(one(|w| w.field_i32(1, -64)), [0x15, 0x7f, 0x00]);
        assert_eq!(one(|w| w.field_i32(1, 64)), [0x15, 0x80, 0x01, 0x00]);
        // 300 -> 600 = 0b100_1011000: 0xd8 0x04.
        assert_eq!(one(|w| w.field_i16(2, 300)), [0x24, 0xd8, 0x04, 0x00]);
        // i8: the byte itself, no zigzag.
        assert_eq!(one(|w| w.field_i8(1, 16)), [0x13, 0x10, 0x00]);
        assert_eq!(one(|w| w.field_i8(1, -1)), [0x13, 0xff, 0x00]);
        // i64 extremes: zigzag(i64::MAX) = u64::MAX - 1, zigzag(i64::MIN) = u64::MAX,
        // ten bytes each.
        let mut max = vec![0x16, 0xfe];
        max.extend([0xff; 8]);
        max.extend([0x01, 0x00]);
        assert_eq!(one(|w| w.field_i64(1, i64::MAX)), max);
        let mut min = vec![0x16];
        min.extend([0xff; 9]);
        min.extend([0x01, 0x00]);
        assert_eq!(one(|w| w.field_i64(1, i64::MIN)), min);
        // i32::MIN -> 0xffff_ffff: five bytes.
        assert_eq!(
            one(|w| w.field_i32(1, i32::MIN)),
            [0x15, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]
        );
    }

    #[test]
    fn field_ids_are_deltas_and_past_15_the_long_form() {
        let bytes = one(|w| {
            w.field_i32(1, 1); // delta 1
            w.field_i32(3, 1); // delta 2
            w.field_i32(18, 1); // delta 15: still short
            w.field_i32(34, 1); // delta 16: long form, id 34 -> zigzag 68
            w.field_i32(300, 1); // long form, id 300 -> zigzag 600 = 0xd8 0x04
        });
        assert_eq!(
            bytes,
            [0x15, 0x02, 0x25, 0x02, 0xf5, 0x02, 0x05, 0x44, 0x02, 0x05, 0xd8, 0x04, 0x02, 0x00]
        );
    }

    #[test]
    fn booleans_are_folded_into_the_field_header() {
        let bytes = one(|w| {
            w.field_bool(1, true);
            w.field_bool(2, false);
            w.field_bool(20, true);
        });
        assert_eq!(bytes, [0x11, 0x12, 0x01, 0x28, 0x00]);
    }

    #[test]
    fn binary_and_strings_have_a_varint_length() {
        assert_eq!(
            one(|w| w.field_string(4, "abc")),
            [0x48, 0x03, b'a', b'b', b'c', 0x00]
        );
        assert_eq!(one(|w| w.field_binary(1, b"")), [0x18, 0x00, 0x00]);
        let long = vec![7u8; 200];
        let bytes = one(|w| w.field_binary(1, &long));
        assert_eq!(bytes[..3], [0x18, 0xc8, 0x01]);
        assert_eq!(bytes.len(), 3 + 200 + 1);
        assert!(bytes[3..203].iter().all(|&b| b == 7));
    }

    #[test]
    fn lists_have_a_short_header_below_15_elements_and_a_long_one_from_15() {
        let bytes = one(|w| w.field_list(2, Type::I32, &[0, -1, 1], |w, &v| w.elem_i64(v)));
        assert_eq!(bytes, [0x29, 0x35, 0x00, 0x01, 0x02, 0x00]);
        assert_eq!(
            one(|w| w.field_list(1, Type::Binary, &[] as &[&str], |_, _| {})),
            [0x19, 0x08, 0x00]
        );
        let fourteen = [0i64; 14];
        let bytes = one(|w| w.field_list(1, Type::I64, &fourteen, |w, &v| w.elem_i64(v)));
        assert_eq!(bytes[..2], [0x19, 0xe6]);
        assert_eq!(bytes.len(), 2 + 14 + 1);
        let fifteen = [0i64; 15];
        let bytes = one(|w| w.field_list(1, Type::I64, &fifteen, |w, &v| w.elem_i64(v)));
        assert_eq!(bytes[..3], [0x19, 0xf6, 0x0f]);
        assert_eq!(bytes.len(), 3 + 15 + 1);
        let many = vec![1i64; 200];
        let bytes = one(|w| w.field_list(1, Type::I64, &many, |w, &v| w.elem_i64(v)));
        assert_eq!(bytes[..4], [0x19, 0xf6, 0xc8, 0x01]);
        assert_eq!(bytes.len(), 4 + 200 + 1);
    }

    #[test]
    fn nested_structs_count_their_field_ids_from_zero_and_end_with_a_stop() {
        let bytes = one(|w| {
            w.field_i32(1, 1);
            w.field_struct(5, |w| {
                w.field_i32(2, 3);
            });
            // Back in the outer struct: 6 is a delta of 1 from 5.
            w.field_i32(6, 2);
            w.field_list(7, Type::Struct, &["k", "l"], |w, s| {
                w.elem_struct(|w| {
                    w.field_string(1, s);
                    w.field_struct(2, |_| {});
                })
            });
            w.field_i64(8, 0);
        });
        assert_eq!(
            bytes,
            [
                0x15, 0x02, // 1: i32 1
                0x4c, 0x25, 0x06, 0x00, // 5: struct { 2: i32 3 }
                0x15, 0x04, // 6: i32 2
                0x19, 0x2c, // 7: list of 2 structs
                0x18, 0x01, b'k', 0x1c, 0x00, 0x00, // { 1: "k", 2: {} }
                0x18, 0x01, b'l', 0x1c, 0x00, 0x00, // { 1: "l", 2: {} }
                0x16, 0x00, // 8: i64 0
                0x00,
            ]
        );
    }
}
