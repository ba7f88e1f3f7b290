//! [`Merged`]: the array at one timestamp, its fields, and every read of its files.

use std::sync::Arc;

use crate::array::field::FieldRole;
use crate::array::fragment::Fragment;
use crate::array::{visibility, Array};
use crate::error::{Error, Place, Result};
use crate::format::schema::{ArraySchema, ArrayType, VAR_NUM};
use crate::format::Datatype;
use crate::lazy::Lazy;

use crate::read::cells::Cells;
use crate::read::endian::ByteOrder;
use crate::read::{RawFile, ReadEngine};

/// Output cells rendered or indexed together: the var-size index keeps one entry per
/// block (8 bytes per 4096 cells per var field), the sparse merge one checkpoint.
use super::runs::{byte_at, trim_runs, Run, Source, BLOCK};
use super::state::visible;
use super::{dense, sparse};

/// A field of the merged array: a dimension or attribute of the schema at the timestamp.
#[derive(Debug, Clone)]
pub struct MergedField {
    pub name: String,
    pub role: FieldRole,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub nullable: bool,
    /// What a cell no fragment wrote holds (one cell), and its validity.
    pub fill: Vec<u8>,
    pub fill_valid: bool,
    /// Per source, the index of this field among the source's fields (by name); `None`
    /// where the fragment predates the field (schema evolution): fill.
    pub(crate) sources: Vec<Option<usize>>,
}

impl MergedField {
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }

    /// Bytes per cell of a fixed-size field.
    pub fn cell_size(&self) -> u64 {
        if self.is_var() {
            8
        } else {
            u64::from(self.cell_val_num) * self.datatype.size()
        }
    }
}

pub(crate) enum Shape {
    Dense(dense::DenseLayout),
    Sparse(Box<sparse::SparseMerge>),
}

/// The array at one timestamp.
pub struct Merged {
    /// The timestamp (ms since the epoch); `None`: now.
    pub at: Option<u64>,
    pub schema_name: String,
    pub schema: Arc<ArraySchema>,
    pub sources: Vec<Source>,
    pub fields: Vec<MergedField>,
    pub(crate) engine: Arc<ReadEngine>,
    pub(crate) shape: Shape,
    /// Per field: where each block of its var-size values starts, and the total.
    pub(crate) var_index: Vec<Lazy<Arc<Vec<u64>>>>,
}

impl Merged {
    /// What a sparse merge reads from.
    pub(crate) fn sparse_input(&self) -> sparse::Input<'_> {
        sparse::Input {
            sources: &self.sources,
            engine: &self.engine,
            schema: &self.schema,
        }
    }

    /// The array as TileDB reads it at `at` (`None`: now), reading through `engine`.
    pub fn open(engine: Arc<ReadEngine>, array: &Array, at: Option<u64>) -> Result<Merged> {
        let t = at.unwrap_or(u64::MAX);
        let place = || Place::file(array.location());
        if let Some(upd) = array
            .condition_commits
            .iter()
            .find(|c| c.is_update && c.timestamp <= t)
        {
            return Err(Error::corrupt(
                place(),
                format!(
                    "{}: an update commit; the merged view does not apply updates",
                    upd.rel_path
                ),
            ));
        }
        let schema_file = array.schema_at(t);
        let schema = schema_file.schema.clone();
        // Visible fragments, oldest first by (t1, name): the later wins. TileDB opens
        // each by its name ([`visibility`]): in a sparse array from format 15 on from
        // its first timestamp, else from its last; a replaced fragment shows until a
        // `.vac` file that lists it opens (in a sparse array, at the consolidated
        // fragment's first timestamp: then that fragment alone covers its range).
        let dense = schema.array_type == ArrayType::Dense;
        let candidates = visible(array, dense, t);
        let fragments: Vec<&Arc<Fragment>> = candidates.iter().map(|(f, _)| *f).collect();
        Fragment::preload_metas(&fragments, &array.schemas);
        let mut sources = Vec::new();
        for (fragment, _) in candidates {
            let meta = fragment.meta(&array.schemas)?;
            // Its cells must be there before its domain is merged into the array's.
            meta.check_tile_count()?;
            // Opened inside its range: with per-cell timestamps it shows the cells
            // stamped up to T, without them every cell (as TileDB does).
            let partial =
                visibility::partly_visible(&fragment.timestamps, meta.footer.has_timestamps, t);
            sources.push(Source {
                fragment: fragment.clone(),
                meta,
                partial,
            });
        }
        let fields = merged_fields(&schema, &sources);
        let shape = if schema.array_type == ArrayType::Dense {
            Shape::Dense(
                dense::DenseLayout::new(&schema, &sources)
                    .map_err(|r| Error::corrupt(place(), r))?,
            )
        } else {
            Shape::Sparse(Box::new(sparse::SparseMerge::new(
                &schema,
                &sources,
                t,
                array,
                engine.clone(),
            )?))
        };
        let var_index = fields.iter().map(|_| Lazy::default()).collect();
        Ok(Merged {
            at,
            schema_name: schema_file.name.clone(),
            schema,
            sources,
            fields,
            engine,
            shape,
            var_index,
        })
    }

    pub fn is_dense(&self) -> bool {
        matches!(self.shape, Shape::Dense(_))
    }

    /// Cells of the merged array (a sparse array's are counted by one merge pass).
    pub fn cell_count(&self) -> Result<u64> {
        match &self.shape {
            Shape::Dense(d) => Ok(d.cell_count()),
            Shape::Sparse(s) => s.cell_count(self.sparse_input()),
        }
    }

    /// Dense: the number of cells along each dimension of the non-empty domain.
    pub fn shape(&self) -> Option<Vec<u64>> {
        match &self.shape {
            Shape::Dense(d) => Some(d.extents()),
            Shape::Sparse(_) => None,
        }
    }

    /// The non-empty domain: per dimension the low and high value's bytes; `None` when
    /// nothing is visible. (The union of the visible fragments' domains, as TileDB's
    /// `nonempty_domain`: a partly visible fragment counts whole.)
    pub fn non_empty_domain(&self) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out: Option<Vec<(Vec<u8>, Vec<u8>)>> = None;
        let cmp = |d: usize, a: &[u8], b: &[u8]| -> std::cmp::Ordering {
            let t = self.schema.dimensions[d].datatype;
            if self.schema.dimensions[d].is_var() || t.is_string() {
                a.cmp(b)
            } else if t.is_float() {
                let f = |x: &[u8]| match t {
                    Datatype::Float32 => f32::from_le_bytes(x.try_into().unwrap_or([0; 4])) as f64,
                    _ => f64::from_le_bytes(x.try_into().unwrap_or([0; 8])),
                };
                f(a).total_cmp(&f(b))
            } else {
                crate::format::datatype::decode_int(a, t)
                    .cmp(&crate::format::datatype::decode_int(b, t))
            }
        };
        for s in &self.sources {
            let domain = &s.meta.footer.non_empty_domain;
            if domain.len() != self.schema.dimensions.len() || s.meta.cell_count() == 0 {
                continue;
            }
            match &mut out {
                None => out = Some(domain.clone()),
                Some(acc) => {
                    for (d, ((lo, hi), (l, h))) in acc.iter_mut().zip(domain).enumerate() {
                        if cmp(d, l, lo).is_lt() {
                            *lo = l.clone();
                        }
                        if cmp(d, h, hi).is_gt() {
                            *hi = h.clone();
                        }
                    }
                }
            }
        }
        out
    }

    /// The runs of output cells `[first, first + n)` (clipped to the cell count).
    pub fn runs(&self, first: u64, n: u64) -> Result<Vec<Run>> {
        match &self.shape {
            Shape::Dense(d) => Ok(d.runs(first, n)),
            Shape::Sparse(s) => s.runs(self.sparse_input(), first, n),
        }
    }

    /// Calls `emit(out, source, cell)` for each output cell of `[first, first + n)`
    /// with the source cell it shows, in one merge pass (counting the cells on the way
    /// if they are not yet); dense arrays' cells come from their runs.
    pub fn visit(&self, first: u64, n: u64, emit: &mut dyn FnMut(u64, usize, u64)) -> Result<()> {
        match &self.shape {
            Shape::Sparse(s) => s.visit(self.sparse_input(), first, n, emit),
            Shape::Dense(d) => {
                let mut out = first;
                for run in d.runs(first, n) {
                    for i in 0..run.count {
                        if let Some(source) = run.source {
                            emit(out, source, run.cell + i * run.stride);
                        }
                        out += 1;
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether the cells are counted already (dense: always, from the domain).
    pub fn counted(&self) -> bool {
        match &self.shape {
            Shape::Dense(_) => true,
            Shape::Sparse(s) => s.counted(),
        }
    }

    /// The size of a raw file of field `f` if it is known without a pass over cells.
    pub fn known_size(&self, f: usize, file: RawFile) -> Option<u64> {
        let field = self.fields.get(f)?;
        let var_values = file == RawFile::Values && field.is_var();
        if !self.counted() || (var_values && !self.var_index[f].is_loaded()) {
            return None;
        }
        self.size(f, file).ok()
    }

    /// Exact size of a raw file of field `f`.
    pub fn size(&self, f: usize, file: RawFile) -> Result<u64> {
        let field = self.field(f)?;
        let cells = self.cell_count()?;
        Ok(match file {
            RawFile::Values if field.is_var() => *self.var_starts(f)?.last().unwrap_or(&0),
            RawFile::Values => cells.saturating_mul(field.cell_size()),
            RawFile::Offsets => cells.saturating_mul(8),
            RawFile::Validity => cells,
        })
    }

    pub(crate) fn field(&self, f: usize) -> Result<&MergedField> {
        self.fields
            .get(f)
            .ok_or_else(|| Error::NotFound(format!("field #{f}")))
    }

    /// Appends bytes `[offset, offset + len)` of a raw file of field `f` (clipped to its
    /// size) to `out`.
    pub fn read_into(
        &self,
        f: usize,
        file: RawFile,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.read_ordered_into(f, file, offset, len, ByteOrder::Stored, out)
    }

    /// [`Merged::read_into`] with the values of a fixed-size field in byte order
    /// `order` (netCDF classic's big-endian), each run put in order as it is gathered.
    /// Other files (offsets, validity, var-size values) are bytes: as stored.
    pub fn read_ordered_into(
        &self,
        f: usize,
        file: RawFile,
        offset: u64,
        len: u64,
        order: ByteOrder,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let field = self.field(f)?;
        // Fixed-size values and validity stream before the cells are counted: the
        // merge stops at the last cell (a sequential reader needs no counting pass).
        let streams = !self.counted() && (file == RawFile::Validity || !field.is_var());
        let size = if streams {
            u64::MAX
        } else {
            self.size(f, file)?
        };
        let end = offset.saturating_add(len).min(size);
        if offset >= end {
            return Ok(());
        }
        match file {
            RawFile::Values if field.is_var() => self.read_var_bytes(f, offset, end, out),
            RawFile::Offsets => {
                let (a, b) = (offset / 8, end.div_ceil(8));
                let starts = self.cell_starts(f, a, b - a)?;
                let bytes: Vec<u8> = starts.iter().flat_map(|s| s.to_le_bytes()).collect();
                let from = (offset - a * 8) as usize;
                out.extend_from_slice(&bytes[from..from + (end - offset) as usize]);
                Ok(())
            }
            _ => {
                let per = match file {
                    RawFile::Validity => 1,
                    _ => field.cell_size(),
                };
                let (a, b) = (offset / per, end.div_ceil(per));
                let order = if file == RawFile::Values {
                    order
                } else {
                    ByteOrder::Stored
                };
                let before = out.len();
                self.gather_fixed(f, file, a, b - a, order, out)?;
                // Cut to the bytes asked for (a read need not start at a cell; a
                // streaming one may end early, at the last cell).
                let skip = ((offset - a * per) as usize).min(out.len() - before);
                out.drain(before..before + skip);
                out.truncate(before + (end - offset) as usize);
                Ok(())
            }
        }
    }

    /// Read-ahead of bytes `[offset, offset + len)` of a raw file of field `f`, as a
    /// fragment's own file gets it: the stored tiles its cells come from are brought
    /// into the page cache and their chunk headers walked, one call per source fragment
    /// over the span of its cells. Without it a cold merged read waits for the disk tile
    /// by tile: a dense state's rows cross many tiles, whose reads the kernel does not
    /// see as sequential. Dense states' fixed-size values and validity only: there the
    /// cells' sources follow from the domain, where a sparse state's would take the
    /// merge itself.
    pub fn read_ahead(&self, f: usize, file: RawFile, offset: u64, len: u64) -> Result<()> {
        let Shape::Dense(d) = &self.shape else {
            return Ok(());
        };
        let field = self.field(f)?;
        let validity = file == RawFile::Validity;
        // A dense state's coordinates are computed, not read: nothing to prepare.
        let stored_values =
            file == RawFile::Values && !field.is_var() && field.role != FieldRole::Dimension;
        if !(validity || stored_values) {
            return Ok(());
        }
        let per = if validity { 1 } else { field.cell_size() };
        let end = offset.saturating_add(len).min(self.size(f, file)?);
        if offset >= end {
            return Ok(());
        }
        let (a, b) = (offset / per, end.div_ceil(per));
        let mut spans: Vec<Option<(u64, u64)>> = vec![None; self.sources.len()];
        for run in d.runs(a, b - a) {
            let Some(span) = run.source.and_then(|s| spans.get_mut(s)) else {
                continue;
            };
            let last = run.count.saturating_sub(1).saturating_mul(run.stride);
            let stop = run.cell.saturating_add(last).saturating_add(1);
            *span = Some(span.map_or((run.cell, stop), |(lo, hi)| {
                (lo.min(run.cell), hi.max(stop))
            }));
        }
        for (s, span) in spans.into_iter().enumerate() {
            let (Some((lo, hi)), Some(i)) = (span, field.sources.get(s).copied().flatten()) else {
                continue;
            };
            let source = &self.sources[s];
            let reader = self.engine.field(&source.fragment, &source.meta, i)?;
            if validity && !reader.field.nullable {
                continue;
            }
            let place = || source.fragment.place();
            reader.read_ahead(
                file,
                byte_at(lo, per, place)?,
                byte_at(hi - lo, per, place)?,
            )?;
        }
        Ok(())
    }

    /// Appends the values (or validity bytes) of cells `[first, first + n)` of a
    /// fixed-size field to `out`, straight from the fragments' files.
    fn gather_fixed(
        &self,
        f: usize,
        file: RawFile,
        first: u64,
        n: u64,
        order: ByteOrder,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let field = self.field(f)?;
        let validity = file == RawFile::Validity;
        if let (Shape::Dense(d), FieldRole::Dimension, false) = (&self.shape, field.role, validity)
        {
            let before = out.len();
            d.coordinates(f, field.datatype, first, n, out);
            order.apply(&mut out[before..]);
            return Ok(());
        }
        if let Shape::Sparse(s) = &self.shape {
            if let Some(picks) = s.picks(first, n) {
                return self.gather_picks(f, validity, &picks, order, out);
            }
        }
        self.gather_runs(f, validity, self.runs(first, n)?, order, out)
    }

    /// Dense arrays: cells `[first, first + n)`, in row-major order, of the box
    /// `region` (per dimension its first and last coordinate; it may reach outside the
    /// non-empty domain, whose cells are fill) of fixed-size attribute `f`: its values,
    /// or its validity bytes.
    pub fn region_into(
        &self,
        f: usize,
        validity: bool,
        region: &[(i128, i128)],
        first: u64,
        n: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let Shape::Dense(d) = &self.shape else {
            return Err(Error::NotFound("a box of a sparse array".into()));
        };
        let runs = trim_runs(d.region_runs(region), first, n);
        self.gather_runs(f, validity, runs, ByteOrder::Stored, out)
    }

    /// Dense arrays: the domains of the visible fragments that wrote cells (the boxes
    /// a Zarr chunk must meet to exist).
    pub fn written_domains(&self) -> Vec<Vec<(i128, i128)>> {
        match &self.shape {
            Shape::Dense(d) => d.written_domains().map(<[_]>::to_vec).collect(),
            Shape::Sparse(_) => Vec::new(),
        }
    }

    /// Cells `[first, first + n)` of field `f`, with their validity.
    pub fn cells(&self, f: usize, first: u64, n: u64) -> Result<Cells> {
        let field = self.field(f)?;
        let n = n.min(self.cell_count()?.saturating_sub(first));
        let validity = if field.nullable {
            let mut v = Vec::new();
            self.gather_fixed(f, RawFile::Validity, first, n, ByteOrder::Stored, &mut v)?;
            Some(v)
        } else {
            None
        };
        if !field.is_var() {
            let mut values = Vec::new();
            self.gather_fixed(f, RawFile::Values, first, n, ByteOrder::Stored, &mut values)?;
            return Ok(Cells::fixed(
                first,
                values,
                field.cell_size() as usize,
                validity,
            ));
        }
        self.var_cells(field, first, self.runs(first, n)?, validity)
    }

    /// Dense arrays: cells `[first, first + n)`, in row-major order, of the box
    /// `region` (as in [`Merged::region_into`]) of var-size attribute `f`: what a Zarr
    /// chunk of a string attribute holds, read a block at a time. Their validity is not
    /// read (Zarr keeps it in an array of its own, read by [`Merged::region_into`], as
    /// are fixed-size fields, which need no cell bounds).
    pub fn region_cells(
        &self,
        f: usize,
        region: &[(i128, i128)],
        first: u64,
        n: u64,
    ) -> Result<Cells> {
        let field = self.field(f)?;
        let Shape::Dense(d) = &self.shape else {
            return Err(Error::NotFound("a box of a sparse array".into()));
        };
        if !field.is_var() {
            return Err(Error::NotFound(format!(
                "var-size cells of fixed-size field {}",
                field.name
            )));
        }
        let runs = trim_runs(d.region_runs(region), first, n);
        self.var_cells(field, first, runs, None)
    }

    /// The cells of `runs` of var-size field `field` (the first is output cell
    /// `first`), with their validity.
    fn var_cells(
        &self,
        field: &MergedField,
        first: u64,
        runs: Vec<Run>,
        validity: Option<Vec<u8>>,
    ) -> Result<Cells> {
        let mut values = Vec::new();
        let mut bounds = vec![0u64];
        for run in runs {
            let source_field = run.source.and_then(|s| field.sources[s].map(|i| (s, i)));
            let Some((s, i)) = source_field else {
                for _ in 0..run.count {
                    values.extend_from_slice(&field.fill);
                    bounds.push(values.len() as u64);
                }
                continue;
            };
            let source = &self.sources[s];
            let reader = self.engine.field(&source.fragment, &source.meta, i)?;
            let mut take = |cells: Cells| {
                for k in 0..cells.len() {
                    values.extend_from_slice(cells.value(k));
                    bounds.push(values.len() as u64);
                }
            };
            if run.stride == 1 {
                take(reader.cells(run.cell, run.count)?);
            } else {
                for k in 0..run.count {
                    take(reader.cells(run.cell + k * run.stride, 1)?);
                }
            }
        }
        Ok(Cells::var(first, values, bounds, validity))
    }

    /// Where each block of [`BLOCK`] cells of var field `f` starts in its `values.bin`,
    /// and the total at the end: one pass over the cells' offsets, kept.
    fn var_starts(&self, f: usize) -> Result<Arc<Vec<u64>>> {
        self.var_index[f].get_or_load(|| {
            let cells = self.cell_count()?;
            let mut starts = Vec::with_capacity(cells.div_ceil(BLOCK) as usize + 1);
            let mut total = 0u64;
            let mut first = 0;
            while first < cells {
                starts.push(total);
                let n = BLOCK.min(cells - first);
                let block = self.cells(f, first, n)?;
                total += block
                    .bounds
                    .as_ref()
                    .and_then(|b| b.last())
                    .copied()
                    .unwrap_or(0);
                first += n;
            }
            starts.push(total);
            Ok(Arc::new(starts))
        })
    }

    /// The start of cells `[first, first + n)` in the var field's `values.bin`.
    fn cell_starts(&self, f: usize, first: u64, n: u64) -> Result<Vec<u64>> {
        let index = self.var_starts(f)?;
        let mut out = Vec::with_capacity(n as usize);
        let mut cell = first;
        while cell < first + n {
            let block = cell / BLOCK;
            let block_first = block * BLOCK;
            let base = index.get(block as usize).copied().unwrap_or(0);
            let upto = (block_first + BLOCK).min(first + n);
            let cells = self.cells(f, block_first, upto - block_first)?;
            let bounds = cells.bounds.unwrap_or_default();
            for c in cell..upto {
                out.push(base + bounds.get((c - block_first) as usize).copied().unwrap_or(0));
            }
            cell = upto;
        }
        Ok(out)
    }

    /// Appends bytes `[offset, end)` of var field `f`'s `values.bin`.
    fn read_var_bytes(&self, f: usize, offset: u64, end: u64, out: &mut Vec<u8>) -> Result<()> {
        let index = self.var_starts(f)?;
        let blocks = index.len().saturating_sub(1);
        let cells = self.cell_count()?;
        let mut pos = offset;
        while pos < end {
            let b = index[..blocks]
                .partition_point(|&s| s <= pos)
                .saturating_sub(1);
            let (start, stop) = (index[b], index[b + 1]);
            let first = b as u64 * BLOCK;
            let block = self.cells(f, first, BLOCK.min(cells - first))?;
            if block.values.len() as u64 != stop - start {
                return Err(Error::corrupt(
                    Place::file(format!("{}/values.bin", self.fields[f].name)),
                    "a block of var-size values changed size since it was counted",
                ));
            }
            let to = end.min(stop);
            out.extend_from_slice(&block.values[(pos - start) as usize..(to - start) as usize]);
            pos = to;
        }
        Ok(())
    }
}

/// The fields of the schema at the timestamp, each matched to the sources' fields.
fn merged_fields(schema: &ArraySchema, sources: &[Source]) -> Vec<MergedField> {
    let find = |name: &str, role: FieldRole| -> Vec<Option<usize>> {
        sources
            .iter()
            .map(|s| {
                s.meta
                    .fields
                    .iter()
                    .position(|f| f.name == name && f.role == role)
            })
            .collect()
    };
    let mut out = Vec::new();
    for d in &schema.dimensions {
        out.push(MergedField {
            name: d.name.clone(),
            role: FieldRole::Dimension,
            datatype: d.datatype,
            cell_val_num: d.cell_val_num,
            nullable: false,
            fill: Vec::new(),
            fill_valid: true,
            sources: find(&d.name, FieldRole::Dimension),
        });
    }
    for a in &schema.attributes {
        out.push(MergedField {
            name: a.name.clone(),
            role: FieldRole::Attribute,
            datatype: a.datatype,
            cell_val_num: a.cell_val_num,
            nullable: a.nullable,
            fill: a.fill_value.clone(),
            fill_valid: a.fill_value_validity,
            sources: find(&a.name, FieldRole::Attribute),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::array::Array;
    use crate::array::OpenOptions;
    use crate::storage::LocalStore;

    /// The sources of the state at `at` of fixture `name` (tests/fixtures/consolidation):
    /// per fragment its timestamp range and whether it shows only part of its cells.
    fn sources_at(name: &str, at: Option<u64>) -> Vec<(u64, u64, bool)> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/consolidation")
            .join(name);
        let store = Arc::new(LocalStore::open(&path).unwrap());
        let array = Array::open(store, OpenOptions::default()).unwrap();
        let engine = Arc::new(ReadEngine::new(64 << 20));
        let merged = Merged::open(engine, &array, at).unwrap();
        merged
            .sources
            .iter()
            .map(|s| {
                (
                    s.fragment.timestamps.t1,
                    s.fragment.timestamps.t2,
                    s.partial,
                )
            })
            .collect()
    }

    /// A sparse consolidation (format 15 on) hides what it replaced from its first
    /// timestamp on, vacuumed or not: inside its range it alone shows, its cells
    /// stamped up to T, so cells a purge dropped never come back.
    #[test]
    fn a_sparse_consolidation_replaces_its_fragments_from_its_first_timestamp() {
        // Writes 1, 2, 4 consolidated into __1_4 with purging, not vacuumed; then 7.
        let purged = "sparse_purge_unvacuumed";
        assert_eq!(sources_at(purged, Some(0)), vec![]);
        assert_eq!(sources_at(purged, Some(1)), vec![(1, 4, true)]);
        assert_eq!(sources_at(purged, Some(3)), vec![(1, 4, true)]);
        assert_eq!(sources_at(purged, Some(4)), vec![(1, 4, false)]);
        assert_eq!(sources_at(purged, None), vec![(1, 4, false), (7, 7, false)]);
        // Writes 1-5, only 2-4 consolidated into __2_4, not vacuumed.
        let window = "sparse_window_unvacuumed";
        assert_eq!(sources_at(window, Some(1)), vec![(1, 1, false)]);
        assert_eq!(
            sources_at(window, Some(2)),
            vec![(1, 1, false), (2, 4, true)]
        );
        assert_eq!(
            sources_at(window, Some(5)),
            vec![(1, 1, false), (2, 4, false), (5, 5, false)]
        );
    }

    /// A dense consolidation shows from its last timestamp on, and what it replaced
    /// until then; consolidated twice, each `.vac` hides its own list.
    #[test]
    fn a_dense_consolidation_replaces_its_fragments_from_its_last_timestamp() {
        // Writes 1-3 consolidated into __1_3, not vacuumed; then 4.
        let once = "dense_unvacuumed";
        assert_eq!(
            sources_at(once, Some(2)),
            vec![(1, 1, false), (2, 2, false)]
        );
        assert_eq!(sources_at(once, Some(3)), vec![(1, 3, false)]);
        assert_eq!(sources_at(once, None), vec![(1, 3, false), (4, 4, false)]);
        // 1, 2 into __1_2; 3, 4 written; __1_2, 3, 4 into __1_4; then 5.
        let twice = "dense_twice_unvacuumed";
        assert_eq!(sources_at(twice, Some(1)), vec![(1, 1, false)]);
        assert_eq!(sources_at(twice, Some(2)), vec![(1, 2, false)]);
        assert_eq!(
            sources_at(twice, Some(3)),
            vec![(1, 2, false), (3, 3, false)]
        );
        assert_eq!(sources_at(twice, Some(4)), vec![(1, 4, false)]);
        assert_eq!(
            sources_at(twice, Some(5)),
            vec![(1, 4, false), (5, 5, false)]
        );
    }

    #[test]
    fn byte_positions_past_64_bits_are_errors_naming_the_place() {
        let place = || Place::file("__fragments/f");
        assert_eq!(byte_at(1 << 20, 8, place).unwrap(), 8 << 20);
        let e = byte_at(u64::MAX / 4, 8, place).unwrap_err().to_string();
        assert!(
            e.contains("__fragments/f") && e.contains("past 64 bits"),
            "{e}"
        );
    }
}
