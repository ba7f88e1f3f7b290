//! `values.png`: a quick look beside the `values.bin` of a dense attribute of 2 or more
//! dimensions (a fragment's, or a state's): its first 2-D slice (the last two
//! dimensions, the others at their first coordinate), colour-mapped
//! ([`crate::encode::quicklook`]), at most [`MAX_SIDE`] pixels on a side.
//!
//! Strided, never averaged: with stride `s` (the longest side over 1024, rounded up) a
//! pixel is the cell at every `s`-th row and column from the first, so only the
//! chunks of the tiles those cells lie in are decoded, and the file is made from at most
//! 1024 x 1024 cells whatever the attribute's size (an average would decode every tile).
//! The sampled cells of a row are read in spans (nearby cells in one read, at most
//! [`SPAN_BYTES`] at once), so memory stays at one row of samples, one span and the
//! picture. Made whole on first use and kept like the JSON files; its size shows once
//! made (as a text file's), since making it decodes tiles, which a listing must not.
//!
//! Single-value numeric attributes only (integers, floats, booleans, datetimes as their
//! counts): a string or a cell of several values has no colour.

use crate::array::dense_grid::DenseGrid;
use crate::array::field::FieldRole;
use crate::encode::quicklook::{self, Cell, Look, Range};
use crate::encode::value;
use crate::error::{Error, Place, Result};
use crate::format::datatype::decode_int;
use crate::format::{Datatype, ElementKind};
use crate::read::RawFile;
use crate::view::names;

use super::super::array_tree::ArrayTree;
use super::super::node::{FieldOf, Folder};
use super::field::FieldFacts;
use super::{At, Face};

pub(super) struct ValuesPng;

pub(super) static VALUES_PNG: ValuesPng = ValuesPng;

const NAME: &str = "values.png";

/// The longest side of a quick look, in pixels.
pub const MAX_SIDE: u64 = 1024;

/// The most bytes one read of sampled cells asks for; cells closer than [`GAP_BYTES`]
/// share a read.
const SPAN_BYTES: u64 = 4 << 20;
const GAP_BYTES: u64 = 4 << 10;

/// Where the cells of the 2-D slice are in `values.bin`.
enum Cells {
    /// A state's: the box of the non-empty domain, row-major; the slice is its first.
    RowMajor { cols: u64 },
    /// A fragment's: its tiles in tile order ([`DenseGrid`]); `first` is the first
    /// coordinate of every dimension of the non-empty domain.
    Tiles { grid: DenseGrid, first: Vec<i128> },
}

impl Cells {
    /// The cell at row `r`, column `c` of the slice.
    fn index(&self, r: u64, c: u64) -> Option<u64> {
        match self {
            Cells::RowMajor { cols } => r.checked_mul(*cols)?.checked_add(c),
            Cells::Tiles { grid, first } => {
                let n = first.len();
                let mut at = first.clone();
                at[n - 2] += i128::from(r);
                at[n - 1] += i128::from(c);
                grid.cell_of(&at)
            }
        }
    }
}

/// What a field's quick look shows, and how it is read.
struct Plan {
    facts: FieldFacts,
    /// Cells along each dimension of the non-empty domain, slowest first.
    shape: Vec<u64>,
    /// The first coordinate along each.
    low: Vec<i128>,
    dims: Vec<String>,
    cells: Cells,
    /// Where errors say they happened: a fragment's metadata (its footer says where the
    /// cells are), or the state's file.
    place: Place,
}

impl Plan {
    fn rows(&self) -> u64 {
        self.shape[self.shape.len() - 2]
    }

    fn cols(&self) -> u64 {
        self.shape[self.shape.len() - 1]
    }

    /// The stride: the longest side over [`MAX_SIDE`], rounded up.
    fn stride(&self) -> u64 {
        self.rows().max(self.cols()).div_ceil(MAX_SIDE).max(1)
    }
}

/// Whether values of `t` have a colour: numbers (booleans and datetimes as theirs).
fn numeric(t: Datatype) -> bool {
    use Datatype::*;
    matches!(
        t,
        Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64 | Float32 | Float64 | Bool
    ) || t.is_temporal()
}

/// The plan of field `of`'s quick look; `NotFound` (why) where it has none.
fn plan(tree: &ArrayTree, of: FieldOf) -> Result<Plan> {
    let not_here = |why: &str| Error::NotFound(format!("{NAME}: {why}"));
    let facts = tree.field_facts(of)?;
    if facts.role != FieldRole::Attribute {
        return Err(not_here("a dimension"));
    }
    if facts.cell_val_num != 1 {
        return Err(not_here("not one value per cell"));
    }
    if !numeric(facts.datatype) {
        return Err(not_here("not a number"));
    }
    let (schema, bounds, cells_of): (_, Vec<(i128, i128)>, Option<DenseGrid>) = match of.folder {
        Folder::State(w) => {
            let merged = tree.merged(w)?;
            let (true, Some(domain)) = (merged.is_dense(), merged.non_empty_domain()) else {
                return Err(not_here("not a dense state with cells"));
            };
            let dims = &merged.schema.dimensions;
            let bounds = domain
                .iter()
                .zip(dims)
                .map(|((lo, hi), d)| {
                    Some((decode_int(lo, d.datatype)?, decode_int(hi, d.datatype)?))
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| not_here("a dimension that is not an integer"))?;
            (merged.schema.clone(), bounds, None)
        }
        Folder::Fragment(f) => {
            let (_, meta) = tree.meta(f)?;
            if !meta.footer.dense {
                return Err(not_here("a sparse fragment"));
            }
            let grid = DenseGrid::new(&meta.schema, &meta.footer).map_err(|e| not_here(&e))?;
            let dims = &meta.schema.dimensions;
            let bounds = meta
                .footer
                .non_empty_domain
                .iter()
                .zip(dims)
                .map(|((lo, hi), d)| {
                    Some((decode_int(lo, d.datatype)?, decode_int(hi, d.datatype)?))
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| not_here("a dimension that is not an integer"))?;
            (meta.schema.clone(), bounds, Some(grid))
        }
    };
    if bounds.len() < 2 || bounds.len() != schema.dimensions.len() {
        return Err(not_here("fewer than 2 dimensions"));
    }
    let shape = bounds
        .iter()
        .map(|&(lo, hi)| u64::try_from(hi - lo + 1).ok().filter(|&n| n > 0))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| not_here("an empty non-empty domain"))?;
    let low: Vec<i128> = bounds.iter().map(|&(lo, _)| lo).collect();
    let place = match of.folder {
        Folder::Fragment(f) => tree
            .fragment(f)?
            .place()
            .in_file(crate::array::fragment::METADATA_FILE)
            .detail(format!("{NAME} of field {}", names::encode(&facts.name))),
        Folder::State(w) => Place::file(format!(
            "{}/{}/{NAME}",
            super::super::node::state_dir(w),
            names::encode(&facts.name)
        )),
    };
    let cells = match cells_of {
        None => Cells::RowMajor {
            cols: shape[shape.len() - 1],
        },
        Some(grid) => Cells::Tiles {
            grid,
            first: low.clone(),
        },
    };
    Ok(Plan {
        facts,
        shape,
        low,
        dims: schema.dimensions.iter().map(|d| d.name.clone()).collect(),
        cells,
        place,
    })
}

/// One value of `t` as a float.
fn as_f64(b: &[u8], t: Datatype) -> f64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    match t.element_kind() {
        ElementKind::I8 => a[0] as i8 as f64,
        ElementKind::U8 => a[0] as f64,
        ElementKind::I16 => i16::from_le_bytes([a[0], a[1]]) as f64,
        ElementKind::U16 => u16::from_le_bytes([a[0], a[1]]) as f64,
        ElementKind::I32 => i32::from_le_bytes([a[0], a[1], a[2], a[3]]) as f64,
        ElementKind::U32 => u32::from_le_bytes([a[0], a[1], a[2], a[3]]) as f64,
        ElementKind::I64 => i64::from_le_bytes(a) as f64,
        ElementKind::U64 => u64::from_le_bytes(a) as f64,
        ElementKind::F32 => f32::from_le_bytes([a[0], a[1], a[2], a[3]]) as f64,
        ElementKind::F64 => f64::from_le_bytes(a),
    }
}

/// The lowest and highest finite values seen, with their bytes (printed exactly in the
/// attribute's type).
#[derive(Default)]
struct Extremes {
    low: Option<(f64, Vec<u8>)>,
    high: Option<(f64, Vec<u8>)>,
}

impl Extremes {
    fn see(&mut self, v: f64, bytes: &[u8]) {
        if !v.is_finite() {
            return;
        }
        if self.low.as_ref().is_none_or(|(l, _)| v < *l) {
            self.low = Some((v, bytes.to_vec()));
        }
        if self.high.as_ref().is_none_or(|(h, _)| v > *h) {
            self.high = Some((v, bytes.to_vec()));
        }
    }

    fn range(self, t: Datatype) -> Option<Range> {
        let ((low, lb), (high, hb)) = (self.low?, self.high?);
        Some(Range {
            low,
            high,
            low_text: value::element(&lb, t).to_string(),
            high_text: value::element(&hb, t).to_string(),
        })
    }
}

/// The cells of sampled row `r` (columns `0, s, 2s, ...`), read in spans.
fn sample_row(
    at: &At<'_, FieldOf>,
    plan: &Plan,
    r: u64,
    width: u64,
    extremes: &mut Extremes,
    out: &mut Vec<Cell>,
) -> Result<()> {
    let f = &plan.facts;
    let size = f.datatype.size();
    let s = plan.stride();
    let corrupt = |why: String| Error::corrupt(plan.place.clone(), why);
    let mut wanted: Vec<(u64, usize)> = (0..width)
        .map(|j| {
            plan.cells
                .index(r, j * s)
                .map(|i| (i, j as usize))
                .ok_or_else(|| corrupt(format!("no stored cell at row {r}, column {}", j * s)))
        })
        .collect::<Result<_>>()?;
    wanted.sort_unstable();
    let start = out.len();
    out.resize(start + width as usize, Cell::Fill);
    let gap = (GAP_BYTES / size).max(1);
    let most = (SPAN_BYTES / size).max(1);
    let mut k = 0;
    let (mut values, mut validity) = (Vec::new(), Vec::new());
    while k < wanted.len() {
        let first = wanted[k].0;
        let mut end = k + 1;
        while end < wanted.len()
            && wanted[end].0 - wanted[end - 1].0 <= gap
            && wanted[end].0 - first < most
        {
            end += 1;
        }
        let cells = wanted[end - 1].0 - first + 1;
        values.clear();
        at.read_raw(RawFile::Values, first * size, cells * size, &mut values)?;
        if values.len() as u64 != cells * size {
            return Err(corrupt(format!(
                "values.bin ends at cell {} of the {cells} asked from {first}",
                values.len() as u64 / size
            )));
        }
        if f.nullable {
            validity.clear();
            at.read_raw(RawFile::Validity, first, cells, &mut validity)?;
            if validity.len() as u64 != cells {
                return Err(corrupt(format!(
                    "validity.bin ends before cell {}",
                    first + cells
                )));
            }
        }
        for &(i, j) in &wanted[k..end] {
            let o = (i - first) as usize;
            let bytes = &values[o * size as usize..(o + 1) * size as usize];
            let valid = !f.nullable || validity[o] != 0;
            let cell = if bytes == f.fill.as_slice() && (!f.nullable || valid == f.fill_valid) {
                Cell::Fill
            } else if !valid {
                Cell::Null
            } else {
                let v = as_f64(bytes, f.datatype);
                if v.is_nan() {
                    Cell::NotANumber
                } else {
                    extremes.see(v, bytes);
                    Cell::Value(v)
                }
            };
            out[start + j] = cell;
        }
        k = end;
    }
    Ok(())
}

/// `2nd`, `3rd`, `11th`, `21st`.
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The quick look of the field at `at`: sampled, coloured and encoded.
fn render(at: &At<'_, FieldOf>) -> Result<Vec<u8>> {
    let plan = plan(at.tree, at.place)?;
    let s = plan.stride();
    let (rows, cols) = (plan.rows(), plan.cols());
    let (height, width) = (rows.div_ceil(s), cols.div_ceil(s));
    let mut cells = Vec::with_capacity((width * height) as usize);
    let mut extremes = Extremes::default();
    for i in 0..height {
        sample_row(at, &plan, i * s, width, &mut extremes, &mut cells)?;
    }
    let n = plan.shape.len();
    let dims = &plan.dims;
    let span = |d: usize| format!("{} from {} ({} cells)", dims[d], plan.low[d], plan.shape[d]);
    let mut axes = format!("rows: {}; columns: {}", span(n - 2), span(n - 1));
    if n > 2 {
        let fixed: Vec<String> = (0..n - 2)
            .map(|d| format!("{} = {}", dims[d], plan.low[d]))
            .collect();
        axes.push_str(&format!("; the first 2-D slice: {}", fixed.join(", ")));
    }
    let method = match s {
        1 => "every cell: one pixel per cell (stride 1)".to_string(),
        s => format!(
            "strided: the cell at every {} row and column from the first (stride {s}), \
             not averaged, so only the tiles those cells lie in are read",
            ordinal(s)
        ),
    };
    let source = match at.place.folder {
        Folder::State(None) => "latest".to_string(),
        Folder::State(Some(t)) => format!("at {t}"),
        Folder::Fragment(id) => format!("fragment {}", at.tree.fragment(id)?.name),
    };
    let text = vec![
        ("Software".to_string(), "fragfs".to_string()),
        (
            "fragfs:source".to_string(),
            format!("attribute {}, {source}", names::encode(&plan.facts.name)),
        ),
        (
            "fragfs:shape".to_string(),
            plan.shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join("x"),
        ),
        ("fragfs:axes".to_string(), axes),
        ("fragfs:method".to_string(), method),
    ];
    quicklook::encode(&Look {
        width: width as u32,
        height: height as u32,
        cells: &cells,
        range: extremes.range(plan.facts.datatype),
        text,
    })
    .map_err(|e| Error::corrupt(plan.place.clone(), e))
}

impl ValuesPng {
    /// The file, made once and kept (in the view cache, or on disk when larger); its
    /// size learnt for `stat`.
    fn rendered(&self, at: &At<'_, FieldOf>) -> Result<crate::view::cache::Rendered> {
        let generation = at.tree.generation_of(at.place.folder);
        let made = at.tree.rendered(at.ino, generation, || render(at))?;
        at.tree.learn_size(at.ino, generation, made.len(NAME)?);
        Ok(made)
    }
}

impl Face<FieldOf> for ValuesPng {
    fn name(&self) -> &'static str {
        NAME
    }

    fn mime(&self) -> &'static str {
        "image/png"
    }

    fn exists(&self, tree: &ArrayTree, of: FieldOf) -> Result<bool> {
        match plan(tree, of) {
            Ok(_) => Ok(true),
            Err(Error::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn known_size(&self, at: &At<'_, FieldOf>) -> Result<Option<u64>> {
        let generation = at.tree.generation_of(at.place.folder);
        Ok(at.tree.learnt_size(at.ino, generation))
    }

    fn size(&self, at: &At<'_, FieldOf>) -> Result<u64> {
        self.rendered(at)?.len(NAME)
    }

    fn read_into(
        &self,
        at: &At<'_, FieldOf>,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.rendered(at)?.read_into(NAME, offset, len, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_types_have_colours() {
        assert!(numeric(Datatype::Float32) && numeric(Datatype::Bool));
        assert!(numeric(Datatype::DatetimeMs));
        assert!(!numeric(Datatype::StringAscii) && !numeric(Datatype::Char));
        assert!(!numeric(Datatype::Blob));
        assert_eq!(as_f64(&(-3i16).to_le_bytes(), Datatype::Int16), -3.0);
        assert_eq!(as_f64(&2.5f32.to_le_bytes(), Datatype::Float32), 2.5);
        let o: Vec<String> = [2, 3, 4, 11, 12, 21, 113].map(ordinal).to_vec();
        assert_eq!(o, ["2nd", "3rd", "4th", "11th", "12th", "21st", "113th"]);
    }
}
