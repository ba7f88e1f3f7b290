//! TileDB's Hilbert order of sparse cells (cell order `hilbert`): a cell's place is the
//! Hilbert value of its coordinates, each first mapped onto an integer grid of
//! `63 / dimensions` bits, then its coordinates in row-major order break ties. Tile
//! extents play no part.
//!
//! Both halves follow libtiledb exactly, because the order must equal the one its
//! writers sorted each fragment in and its reader merges by: the mapping is
//! `Dimension::map_to_uint64` (tiledb/sm/array_schema/dimension.cc: numbers in
//! doubles, strings by their first eight bytes read as C `char`s, which are signed on
//! the platforms TileDB ships for), the curve is John Skilling's transpose as
//! `Hilbert::coords_to_hilbert` (tiledb/sm/misc/hilbert.h) writes it.

/// The Hilbert curve of one schema: its dimension count and bits per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hilbert {
    dims: usize,
    bits: u32,
}

/// TileDB's limit (`Hilbert::HC_MAX_DIM`): a Hilbert value is 63 bits.
pub const MAX_DIMENSIONS: usize = 15;

impl Hilbert {
    /// The curve over `dims` dimensions (1 to [`MAX_DIMENSIONS`]), `63 / dims` bits
    /// each, as TileDB's readers and writers build it.
    pub fn new(dims: usize) -> Option<Hilbert> {
        (1..=MAX_DIMENSIONS).contains(&dims).then(|| Hilbert {
            dims,
            bits: 63 / dims as u32,
        })
    }

    /// The largest grid coordinate: `2^bits - 1`.
    pub fn max_bucket(&self) -> u64 {
        (1u64 << self.bits) - 1
    }

    /// A number's grid coordinate on a dimension whose domain is `[low, high]`
    /// (every value already converted to a double, as C++ promotes them).
    pub fn map_number(&self, x: f64, low: f64, high: f64) -> u64 {
        // C++ converts the double to uint64_t by truncation; `as` does the same for
        // every value in range and saturates where C++ would be undefined.
        ((x - low) / (high - low) * self.max_bucket() as f64) as u64
    }

    /// A string's grid coordinate: its first eight bytes, big-endian, each OR-ed in as
    /// a sign-extended `char` (so a byte above 0x7f sets every bit above it), shifted
    /// down to `bits`.
    pub fn map_string(&self, bytes: &[u8]) -> u64 {
        let mut v = 0u64;
        for i in 0..8 {
            v <<= 8;
            if let Some(&b) = bytes.get(i) {
                v |= b as i8 as i64 as u64;
            }
        }
        v >> (64 - self.bits)
    }

    /// The Hilbert value of grid coordinates (`coords.len()` must be the dimension
    /// count; the slice is used as scratch, as TileDB does in place).
    pub fn value(&self, coords: &mut [u64]) -> u64 {
        let (n, b) = (self.dims.min(coords.len()), self.bits);
        if n == 0 {
            return 0;
        }
        let x = &mut coords[..n];
        // Inverse undo.
        let mut q = 1u64 << (b - 1);
        while q > 1 {
            let p = q - 1;
            if x[0] & q != 0 {
                x[0] ^= p;
            }
            for i in 1..n {
                if x[i] & q != 0 {
                    x[0] ^= p;
                } else {
                    let t = (x[0] ^ x[i]) & p;
                    x[0] ^= t;
                    x[i] ^= t;
                }
            }
            q >>= 1;
        }
        // Gray encode.
        for i in 1..n {
            x[i] ^= x[i - 1];
        }
        let mut t = x[n - 1];
        let mut i = 1;
        while i < b {
            x[n - 1] ^= x[n - 1] >> i;
            i <<= 1;
        }
        t ^= x[n - 1];
        for v in x[..n - 1].iter_mut() {
            *v ^= t;
        }
        // Interleave the transpose: bit j of every axis, the last axis lowest.
        let mut h = 0u64;
        let mut bit = 0;
        for j in 0..b {
            for i in (0..n).rev() {
                h |= ((x[i] >> j) & 1) << bit;
                bit += 1;
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(bits: u32, dims: usize) -> Hilbert {
        Hilbert { dims, bits }
    }

    /// The values of TileDB's own unit tests (tiledb/sm/misc/test/unit_hilbert.cc).
    #[test]
    fn values_of_tiledbs_unit_tests() {
        let h = curve(4, 2);
        for (c, want) in [
            ([2, 3], 9),
            ([0, 0], 0),
            ([0, 3], 5),
            ([3, 0], 15),
            ([5, 4], 35),
            ([4, 2], 30),
        ] {
            assert_eq!(h.value(&mut c.clone()), want, "{c:?}");
        }
        let h = curve(4, 3);
        for (c, want) in [
            ([0, 0, 0], 0),
            ([0, 0, 1], 1),
            ([0, 1, 0], 3),
            ([1, 0, 0], 7),
        ] {
            assert_eq!(h.value(&mut c.clone()), want, "{c:?}");
        }
        assert_eq!(Hilbert::new(3).map(|h| h.bits), Some(21));
        assert_eq!(Hilbert::new(0), None);
        assert_eq!(Hilbert::new(16), None);
    }

    /// On a 2-D curve every grid cell gets a distinct value and consecutive values are
    /// neighbours: the curve is a Hilbert curve, whatever the bit count.
    #[test]
    fn a_small_curve_visits_each_cell_once_through_neighbours() {
        let h = curve(3, 2);
        let mut at = vec![None; 64];
        for x in 0..8u64 {
            for y in 0..8u64 {
                let v = h.value(&mut [x, y]) as usize;
                assert!(at[v].is_none(), "value {v} twice");
                at[v] = Some((x, y));
            }
        }
        for w in at.windows(2) {
            let ((a, b), (c, d)) = (w[0].unwrap(), w[1].unwrap());
            assert_eq!(a.abs_diff(c) + b.abs_diff(d), 1, "{:?}", w);
        }
    }

    #[test]
    fn strings_map_by_their_first_eight_signed_bytes() {
        let h = curve(31, 2);
        assert_eq!(h.map_string(b""), 0);
        assert_eq!(h.map_string(b"a"), (0x61u64 << 56) >> 33);
        assert_eq!(h.map_string(b"abcdefgh"), h.map_string(b"abcdefghij"));
        // 0xc3 as a signed char sets every bit above it before the next shift.
        let e = b"caf\xc3\xa9";
        let mut v = 0u64;
        for i in 0..8 {
            v <<= 8;
            if i < e.len() {
                v |= e[i] as i8 as i64 as u64;
            }
        }
        assert_eq!(h.map_string(e), v >> 33);
        assert!(h.map_string(e) > h.map_string(b"caf~"));
    }

    #[test]
    fn numbers_map_onto_the_whole_grid() {
        let h = curve(21, 3);
        assert_eq!(h.map_number(-1000.0, -1000.0, 1000.0), 0);
        assert_eq!(h.map_number(1000.0, -1000.0, 1000.0), h.max_bucket());
        assert_eq!(h.map_number(0.0, -1000.0, 1000.0), h.max_bucket() / 2);
    }
}
