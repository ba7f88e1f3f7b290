//! Page headers (`PageHeader`, Thrift compact): a v1 DATA_PAGE and a DICTIONARY_PAGE.

use crate::encode::thrift::Writer;

/// Parquet's `Encoding` values this writer uses.
pub const PLAIN: i32 = 0;
pub const RLE: i32 = 3;
pub const RLE_DICTIONARY: i32 = 8;

/// The header of a v1 DATA_PAGE of `num_values` level entries (rows of a flat
/// column), values in `encoding`, levels (where there are any) in the RLE/bit-packed
/// hybrid, `uncompressed` bytes after the header stored as `compressed`. None where a
/// count or size is over `i32::MAX`, as a page's must not be.
pub fn data_page(
    num_values: u64,
    uncompressed: u64,
    compressed: u64,
    encoding: i32,
) -> Option<Vec<u8>> {
    let n = i32::try_from(num_values).ok()?;
    let uncompressed = i32::try_from(uncompressed).ok()?;
    let compressed = i32::try_from(compressed).ok()?;
    let mut w = Writer::new();
    w.field_i32(1, 0); // type: DATA_PAGE
    w.field_i32(2, uncompressed);
    w.field_i32(3, compressed);
    w.field_struct(5, |w| {
        w.field_i32(1, n);
        w.field_i32(2, encoding);
        w.field_i32(3, RLE); // definition_level_encoding
        w.field_i32(4, RLE); // repetition_level_encoding
    });
    Some(w.finish())
}

/// The header of a DICTIONARY_PAGE of `num_values` PLAIN values in `size` bytes,
/// uncompressed. None over `i32::MAX`.
pub fn dictionary_page(num_values: u64, size: u64) -> Option<Vec<u8>> {
    let n = i32::try_from(num_values).ok()?;
    let size = i32::try_from(size).ok()?;
    let mut w = Writer::new();
    w.field_i32(1, 2); // type: DICTIONARY_PAGE
    w.field_i32(2, size);
    w.field_i32(3, size);
    w.field_struct(7, |w| {
        w.field_i32(1, n);
        w.field_i32(2, PLAIN);
    });
    Some(w.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_page_header_is_byte_exact() {
        assert_eq!(
            data_page(3, 12, 12, PLAIN).unwrap(),
            [
                0x15, 0x00, // 1: DATA_PAGE
                0x15, 0x18, // 2: 12 bytes
                0x15, 0x18, // 3: 12 bytes
                0x2c, // 5: DataPageHeader
                0x15, 0x06, // 1: 3 values
                0x15, 0x00, // 2: PLAIN
                0x15, 0x06, // 3: RLE
                0x15, 0x06, // 4: RLE
                0x00, 0x00,
            ]
        );
        // A compressed page of dictionary indices: sizes differ, encoding 8.
        assert_eq!(
            data_page(64, 100, 70, RLE_DICTIONARY).unwrap(),
            [
                0x15, 0x00, 0x15, 0xc8, 0x01, 0x15, 0x8c, 0x01, 0x2c, 0x15, 0x80, 0x01, 0x15, 0x10,
                0x15, 0x06, 0x15, 0x06, 0x00, 0x00,
            ]
        );
    }

    #[test]
    fn a_dictionary_page_header_is_byte_exact() {
        assert_eq!(
            dictionary_page(2, 10).unwrap(),
            [
                0x15, 0x04, // 1: DICTIONARY_PAGE
                0x15, 0x14, // 2: 10 bytes
                0x15, 0x14, // 3: 10 bytes
                0x4c, // 7: DictionaryPageHeader
                0x15, 0x04, // 1: 2 values
                0x15, 0x00, // 2: PLAIN
                0x00, 0x00,
            ]
        );
    }

    #[test]
    fn sizes_over_i32_are_refused() {
        assert!(data_page(1, 1 << 31, 1, PLAIN).is_none());
        assert!(data_page(1, 1, 1 << 31, PLAIN).is_none());
        assert!(data_page(1 << 31, 1, 1, PLAIN).is_none());
        assert!(data_page(1, i32::MAX as u64, 1, PLAIN).is_some());
        assert!(dictionary_page(1, 1 << 31).is_none());
    }
}
