//! Where things lie in the file: the superblock first, then the datasets' data regions
//! (each on a multiple of [`DATA_ALIGN`]), then the metadata tail; and which of those a
//! read of a byte range meets.

use super::datatype::H5Type;
use super::messages::Attr;

/// The superblock's size: signature 8, 4 one-byte fields, 4 addresses, checksum.
pub const SUPERBLOCK_LEN: u64 = 48;

/// Where data regions start: every one on a multiple of this.
const DATA_ALIGN: u64 = 8;

/// A dataset of the root group.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Its link name (no `/`).
    pub name: String,
    pub dtype: H5Type,
    pub shape: Vec<u64>,
    /// One element: what a reader shows where nothing was written (Fill Value message).
    pub fill: Option<Vec<u8>>,
    pub attrs: Vec<Attr>,
    /// Set: this dataset is a dimension scale of that name (`CLASS`, `NAME`).
    pub scale: Option<String>,
    /// Per dimension, the index of the dataset that is its scale (empty: none named).
    pub dims: Vec<Option<usize>>,
    /// Bytes the data region keeps for the data, if more than they take (zeros after
    /// them): a sparse state's regions are laid out for an upper bound of its cell
    /// count, so the file's size is known before the cells are counted.
    pub reserve: Option<u64>,
}

impl Dataset {
    /// Bytes of its data region.
    pub fn data_size(&self) -> Result<u64, String> {
        let mut n = u64::from(self.dtype.size());
        for &d in &self.shape {
            n = n
                .checked_mul(d)
                .ok_or_else(|| format!("{}: the data size overflows", self.name))?;
        }
        Ok(n)
    }
}

/// The whole file's description.
#[derive(Debug, Clone, Default)]
pub struct File {
    pub root_attrs: Vec<Attr>,
    pub datasets: Vec<Dataset>,
}

/// Where the datasets' data regions lie.
#[derive(Debug, Clone, PartialEq)]
pub struct Regions {
    /// Per dataset, its first byte and its size.
    pub spans: Vec<(u64, u64)>,
    /// The end of the last region: where the metadata tail starts.
    pub end: u64,
}

/// The data regions of `datasets`: from the end of the superblock, each on a multiple
/// of [`DATA_ALIGN`], in order, each as long as its data or its reserve.
pub fn regions(datasets: &[Dataset]) -> Result<Regions, String> {
    let mut at = SUPERBLOCK_LEN;
    let mut spans = Vec::with_capacity(datasets.len());
    for d in datasets {
        let size = d.data_size()?;
        let end = at
            .checked_add(size.max(d.reserve.unwrap_or(0)))
            .and_then(|e| e.checked_next_multiple_of(DATA_ALIGN))
            .ok_or_else(|| format!("{}: the file's size overflows", d.name))?;
        spans.push((at, size));
        at = end;
    }
    Ok(Regions { spans, end: at })
}

/// What byte range of the file a piece of a read is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes `[from, from + len)` of the metadata (as [`metadata`] returns it).
    Meta { from: u64, len: u64 },
    /// Bytes `[from, from + len)` of dataset `index`'s data.
    Data { index: usize, from: u64, len: u64 },
    /// Zero bytes (padding after a data region).
    Zero(u64),
}

/// Bytes `[offset, offset + len)` of the file (clipped to its end) as pieces in order.
/// `meta_len` is the length of what [`metadata`] returned.
pub fn pieces(regions: &Regions, meta_len: u64, offset: u64, len: u64) -> Vec<Piece> {
    let sb = SUPERBLOCK_LEN.min(meta_len);
    let size = regions.end + meta_len.saturating_sub(sb);
    let end = offset.saturating_add(len).min(size);
    let mut out = Vec::new();
    let mut at = offset;
    // (region start, region end, what) in file order, covering [0, size).
    let mut push = |at: &mut u64, upto: u64, piece: &dyn Fn(u64, u64) -> Piece| {
        if *at < upto && *at < end {
            let stop = upto.min(end);
            out.push(piece(*at, stop - *at));
            *at = stop;
        }
    };
    push(&mut at, sb, &|a, n| Piece::Meta { from: a, len: n });
    for (index, &(start, size)) in regions.spans.iter().enumerate() {
        if at >= end {
            break;
        }
        push(&mut at, start, &|_, n| Piece::Zero(n));
        push(&mut at, start + size, &|a, n| Piece::Data {
            index,
            from: a - start,
            len: n,
        });
    }
    push(&mut at, regions.end, &|_, n| Piece::Zero(n));
    let tail = regions.end;
    push(&mut at, size, &|a, n| Piece::Meta {
        from: a - tail + sb,
        len: n,
    });
    out
}

/// A one-dimensional float64 dataset of `n` elements, NaN fill: what the tests lay out.
#[cfg(test)]
impl Dataset {
    pub(crate) fn test_f64(name: &str, n: u64) -> Dataset {
        Dataset {
            name: name.into(),
            dtype: H5Type::Float { size: 8 },
            shape: vec![n],
            fill: Some(f64::NAN.to_le_bytes().to_vec()),
            attrs: vec![],
            scale: None,
            dims: vec![],
            reserve: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserve_keeps_room_after_the_data() {
        let mut a = Dataset::test_f64("a", 1);
        a.reserve = Some(40);
        let r = regions(&[a, Dataset::test_f64("b", 1)]).unwrap();
        assert_eq!(r.spans, vec![(48, 8), (88, 8)]);
        assert_eq!(
            pieces(&r, 60, 50, 40),
            vec![
                Piece::Data {
                    index: 0,
                    from: 2,
                    len: 6
                },
                Piece::Zero(32),
                Piece::Data {
                    index: 1,
                    from: 0,
                    len: 2
                },
            ]
        );
    }

    #[test]
    fn data_regions_follow_the_superblock_aligned() {
        let mut a = Dataset::test_f64("a", 3);
        a.dtype = H5Type::Int {
            size: 1,
            signed: false,
        };
        let r = regions(&[a, Dataset::test_f64("b", 2)]).unwrap();
        assert_eq!(r.spans, vec![(48, 3), (56, 16)]);
        assert_eq!(r.end, 72);
        let mut huge = Dataset::test_f64("h", u64::MAX / 4);
        huge.shape.push(3);
        assert!(regions(&[huge]).unwrap_err().contains("h:"));
    }
}
