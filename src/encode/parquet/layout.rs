//! The file laid out from the facts: the magic, every column chunk's pages (headers
//! and dictionary pages made here, levels and values as body, raw or stored pieces),
//! the footer, its length and the magic again. Large chunks start on a page boundary
//! (see [`ALIGN`]).

use super::footer::{footer, ChunkMeta, GroupMeta};
use super::kind::{leaf, Leaf, Shape};
use super::page::{self, PLAIN, RLE, RLE_DICTIONARY};
use super::plain::{self, Values};
use super::plan::{bad, plan};
use crate::encode::table::{Codec, Layout, Piece, Table};
use crate::error::{Error, Place, Result};

const MAGIC: &[u8] = b"PAR1";

/// The boundary a large column chunk starts on: the page size of the kernel's page
/// cache, through which the mount serves the file. The cache reads whole pages, so a
/// reader of one column's chunk would also get the pages it shares with the chunks
/// before and after it, and the face would decode a tile of each neighbour for bytes
/// nobody asked for. Parquet readers find every chunk (and the footer) by the footer's
/// offsets and never read between them, so zero bytes there cost nothing but size.
pub const ALIGN: u64 = 4096;

/// A chunk is aligned when it or the one before it has at least this many bytes (and
/// the footer when the last chunk has): smaller neighbours' tiles are cheap to decode,
/// and small tables stay small.
pub const ALIGN_FROM: u64 = 16 << 10;

/// Zero bytes to the next multiple of [`ALIGN`].
fn pad(out: &mut Layout) {
    let n = (ALIGN - out.size % ALIGN) % ALIGN;
    out.push_bytes(&vec![0; n as usize]);
}

/// The dictionary page of an enumerated column: its header and its PLAIN labels.
fn dictionary(table: &Table, column: usize, leaf: &Leaf) -> Result<Option<Vec<u8>>> {
    let col = &table.columns[column];
    let Some(labels) = col.labels.as_ref().filter(|_| leaf.dictionary) else {
        return Ok(None);
    };
    let mut values = Values::new(leaf.kind, labels.data.len());
    for (i, label) in labels.values().enumerate() {
        values.push(label).map_err(|e| {
            Error::corrupt(
                Place::file("cells.parquet"),
                format!("column {:?}, label {i}: {e}", col.name),
            )
        })?;
    }
    let values = values.finish();
    let header =
        page::dictionary_page(labels.len() as u64, values.len() as u64).ok_or_else(|| {
            Error::corrupt(
                Place::file("cells.parquet"),
                format!("column {:?}: labels too large for Parquet", col.name),
            )
        })?;
    Ok(Some([header, values].concat()))
}

/// Lays out the file of `table`: its pieces in order and its size. Every offset and
/// size comes from the table's facts; the cells are read only to fill Body pieces
/// (through [`super::body`]), Raw pieces (from `values.bin`) and Stored ones.
/// Groups of no rows are left out: a row group of 0 rows says nothing, and not every
/// reader takes a column chunk without a page.
pub fn layout(table: &Table) -> Result<Layout> {
    Ok(with_groups(table)?.0)
}

/// [`layout`], and the row groups' metadata as the footer has it (for the tests: where
/// each chunk is).
pub(super) fn with_groups(table: &Table) -> Result<(Layout, Vec<GroupMeta>)> {
    if table.columns.is_empty() {
        return Err(Error::corrupt(
            Place::file("cells.parquet"),
            "a Parquet file needs at least one column",
        ));
    }
    let leaves = table.columns.iter().map(leaf).collect::<Result<Vec<_>>>()?;
    let mut dictionaries = Vec::with_capacity(leaves.len());
    for (c, l) in leaves.iter().enumerate() {
        dictionaries.push(dictionary(table, c, l)?);
    }
    let mut out = Layout::default();
    out.push_bytes(MAGIC);
    let mut groups = Vec::with_capacity(table.groups.len());
    let mut first_row = 0u64;
    // The bytes of the chunk before, in the file.
    let mut before = 0u64;
    for (g, group) in table.groups.iter().enumerate() {
        let end = first_row.checked_add(group.rows);
        let end =
            end.ok_or_else(|| Error::corrupt(Place::file("cells.parquet"), "too many rows"))?;
        if group.rows == 0 {
            continue;
        }
        let mut chunks = Vec::with_capacity(table.columns.len());
        for c in 0..table.columns.len() {
            // Laid out apart first: whether it is aligned depends on its size.
            let mut alone = Layout::default();
            let mut meta = chunk(
                table,
                g,
                c,
                &leaves[c],
                first_row..end,
                &dictionaries[c],
                &mut alone,
            )?;
            if alone.size >= ALIGN_FROM || before >= ALIGN_FROM {
                pad(&mut out);
            }
            meta.shift(out.size);
            before = alone.size;
            for p in alone.pieces {
                match p {
                    Piece::Bytes(b) => out.push_bytes(&b),
                    p => out.push(p),
                }
            }
            chunks.push(meta);
        }
        groups.push(GroupMeta {
            rows: group.rows,
            chunks,
        });
        first_row = end;
    }
    let footer = footer(table, &leaves, &groups)?;
    let len = u32::try_from(footer.len())
        .map_err(|_| Error::corrupt(Place::file("cells.parquet"), "the footer is over 4 GiB"))?;
    if before >= ALIGN_FROM {
        pad(&mut out);
    }
    out.push_bytes(&footer);
    out.push_bytes(&len.to_le_bytes());
    out.push_bytes(MAGIC);
    Ok((out, groups))
}

/// Lays out column `c`'s chunk in group `g` (rows `rows` of the table) at the end of
/// `out`; its metadata for the footer.
fn chunk(
    table: &Table,
    g: usize,
    c: usize,
    leaf: &Leaf,
    rows: std::ops::Range<u64>,
    dictionary: &Option<Vec<u8>>,
    out: &mut Layout,
) -> Result<ChunkMeta> {
    let (col, grp, facts) = super::plan::at(table, g, c)?;
    let start = out.size;
    if let Some(stored) = &facts.stored {
        let cell = leaf.kind.size;
        let flat_raw = leaf.raw_values() && leaf.shape == Shape::Flat && cell > 0;
        let total = stored
            .pages
            .iter()
            .try_fold(0u64, |t, p| t.checked_add(p.uncompressed));
        if !flat_raw {
            return Err(bad(
                col,
                g,
                "stored pages of a column Parquet does not write as they are",
            ));
        }
        if total != grp.rows.checked_mul(cell) {
            return Err(bad(
                col,
                g,
                format!(
                    "stored pages of {total:?} bytes for {} rows of {cell}",
                    grp.rows
                ),
            ));
        }
        let (mut uncompressed, mut compressed) = (0u64, 0u64);
        for (k, p) in stored.pages.iter().enumerate() {
            let header = (p.uncompressed % cell == 0)
                .then(|| {
                    page::data_page(p.uncompressed / cell, p.uncompressed, p.compressed, PLAIN)
                })
                .flatten()
                .ok_or_else(|| {
                    bad(
                        col,
                        g,
                        format!("stored page {k} of {} bytes", p.uncompressed),
                    )
                })?;
            let h = header.len() as u64;
            uncompressed = uncompressed
                .saturating_add(h)
                .saturating_add(p.uncompressed);
            compressed = compressed.saturating_add(h).saturating_add(p.compressed);
            out.push_bytes(&header);
            out.push(Piece::Stored {
                group: g,
                column: c,
                page: k,
                len: p.compressed,
            });
        }
        return Ok(ChunkMeta {
            start,
            data_page: start,
            dictionary_page: None,
            num_values: grp.rows,
            uncompressed,
            compressed,
            codec: match stored.codec {
                Codec::Zstd => 6,
                Codec::Lz4 => 7,
            },
            encodings: &[PLAIN, RLE],
            nulls: 0,
            bounds: bounds(leaf, facts),
        });
    }
    let p = plan(table, g, c)?;
    let mut dictionary_page = None;
    if let Some(d) = dictionary {
        dictionary_page = Some(start);
        out.push_bytes(d);
    }
    let data_page = out.size;
    let encoding = if leaf.dictionary {
        RLE_DICTIONARY
    } else {
        PLAIN
    };
    let header = page::data_page(p.entries, p.payload(), p.payload(), encoding)
        .ok_or_else(|| bad(col, g, "a page too large for Parquet"))?;
    out.push_bytes(&header);
    out.push(Piece::Body {
        group: g,
        column: c,
        at: 0,
        len: p.body_len(),
    });
    if p.raw {
        let range = match leaf.shape {
            Shape::List(None) => facts.var_start..facts.var_start.saturating_add(facts.var_bytes),
            _ => {
                let size = col.cell_size();
                rows.start.saturating_mul(size)..rows.end.saturating_mul(size)
            }
        };
        out.push(Piece::Raw { column: c, range });
    }
    let size = out.size - start;
    Ok(ChunkMeta {
        start,
        data_page,
        dictionary_page,
        num_values: p.entries,
        uncompressed: size,
        compressed: size,
        codec: 0,
        encodings: if leaf.dictionary {
            &[PLAIN, RLE, RLE_DICTIONARY]
        } else {
            &[PLAIN, RLE]
        },
        nulls: p.nulls,
        bounds: bounds(leaf, facts),
    })
}

/// Statistics' min and max from the chunk's bounds: flat columns that are no
/// dictionary, and only where both are one value of the type (not a NaN).
fn bounds(leaf: &Leaf, facts: &crate::encode::table::Chunk) -> Option<(Vec<u8>, Vec<u8>)> {
    if leaf.shape != Shape::Flat || leaf.dictionary {
        return None;
    }
    let b = facts.bounds.as_ref()?;
    Some((
        plain::bound(&leaf.kind, &b.min, true)?,
        plain::bound(&leaf.kind, &b.max, false)?,
    ))
}
