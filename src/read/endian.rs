//! Byte order. TileDB stores values little-endian; netCDF classic wants them
//! big-endian. A gather puts each run of values in the order asked for right after
//! copying it, while its bytes are still in the processor's cache, rather than in a
//! pass of its own over the whole read (`array.nc` read whole: daemon CPU 0.68 -> 0.66 s,
//! docs/benchmarks.md).

/// The order values leave a read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// As TileDB stores them (little-endian).
    Stored,
    /// Each value of this many bytes reversed: big-endian.
    Swapped(u64),
}

impl ByteOrder {
    /// Puts `bytes` (whole values, as stored) in this order.
    pub fn apply(self, bytes: &mut [u8]) {
        if let ByteOrder::Swapped(width) = self {
            swap_in_place(bytes, width);
        }
    }
}

/// The bytes of each value of `width` bytes reversed: little-endian to big-endian
/// and back (a trailing partial value is left as it is).
pub fn swap_in_place(bytes: &mut [u8], width: u64) {
    // The common widths as whole words, which the compiler turns into vector byte
    // shuffles: every byte of a netCDF variable's data passes here on every read.
    macro_rules! words {
        ($t:ty) => {
            for v in bytes.chunks_exact_mut(std::mem::size_of::<$t>()) {
                let mut word = [0; std::mem::size_of::<$t>()];
                word.copy_from_slice(v);
                v.copy_from_slice(&<$t>::from_le_bytes(word).to_be_bytes());
            }
        };
    }
    match width {
        0 | 1 => {}
        2 => words!(u16),
        4 => words!(u32),
        8 => words!(u64),
        w => {
            for v in bytes.chunks_exact_mut(w as usize) {
                v.reverse();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_values_not_bytes() {
        let mut v = vec![1, 2, 3, 4, 5, 6, 7, 8];
        swap_in_place(&mut v, 4);
        assert_eq!(v, [4, 3, 2, 1, 8, 7, 6, 5]);
        swap_in_place(&mut v, 1);
        assert_eq!(v, [4, 3, 2, 1, 8, 7, 6, 5]);
        // Every width, with a trailing partial value left as it is.
        for width in [2u64, 3, 4, 8, 16] {
            let bytes: Vec<u8> = (0..37).collect();
            let mut got = bytes.clone();
            swap_in_place(&mut got, width);
            let w = width as usize;
            let mut want = bytes.clone();
            let whole = bytes.len() / w * w;
            for v in want[..whole].chunks_mut(w) {
                v.reverse();
            }
            assert_eq!(got, want, "width {width}");
        }
    }

    #[test]
    fn stored_order_leaves_bytes_alone() {
        let mut v = vec![1, 2, 3, 4];
        ByteOrder::Stored.apply(&mut v);
        assert_eq!(v, [1, 2, 3, 4]);
        ByteOrder::Swapped(2).apply(&mut v);
        assert_eq!(v, [2, 1, 4, 3]);
    }
}
