//! The writer as a whole: bodies are as long as the layout promised, for columns of
//! every shape with nulls, var cells and labels; bad cells are errors, never panics.

use super::layout::{with_groups, ALIGN, ALIGN_FROM};
use super::{body, kind, layout};
use crate::encode::table::{
    null_count, var_counts, Bounds, CellsRef, Chunk, Codec, Column, Group, Layout, Piece, Stored,
    StoredPage, Table,
};
use crate::format::enumeration::Enumeration;
use crate::format::schema::VAR_NUM;
use crate::format::Datatype;

/// One group's cells of one column, owned.
#[derive(Clone)]
struct Cells {
    values: Vec<u8>,
    bounds: Option<Vec<u64>>,
    validity: Option<Vec<u8>>,
}

impl Cells {
    fn as_ref(&self) -> CellsRef<'_> {
        CellsRef {
            values: &self.values,
            bounds: self.bounds.as_deref(),
            validity: self.validity.as_deref(),
        }
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn labels() -> Enumeration {
    Enumeration {
        version: 0,
        name: "e".into(),
        path_name: "__e_0".into(),
        datatype: Datatype::StringUtf8,
        cell_val_num: VAR_NUM,
        ordered: false,
        data: b"redgreenblue".to_vec(),
        offsets: vec![0, 3, 8],
    }
}

fn columns() -> Vec<Column> {
    let c = |name: &str, datatype, cell_val_num, nullable| Column {
        name: name.into(),
        datatype,
        cell_val_num,
        nullable,
        labels: None,
    };
    vec![
        c("i8", Datatype::Int8, 1, true),
        c("i32", Datatype::Int32, 1, false),
        c("u16", Datatype::UInt16, 1, false),
        c("bool", Datatype::Bool, 1, true),
        c("day", Datatype::DatetimeDay, 1, false),
        c("s", Datatype::StringUtf8, VAR_NUM, true),
        c("c3", Datatype::Char, 3, false),
        c("pair", Datatype::Int32, 2, false),
        c("vf", Datatype::Float64, VAR_NUM, true),
        c("vi", Datatype::Int64, VAR_NUM, false),
        Column {
            labels: Some(labels()),
            ..c("enum", Datatype::UInt8, 1, true)
        },
        c("t", Datatype::TimeNs, 1, false),
        c("pair16", Datatype::Int16, 2, true),
    ]
}

/// Random cells of `col`, `rows` of them.
fn cells(col: &Column, rows: u64, rng: &mut Rng) -> Cells {
    let size = col.datatype.size();
    let validity = col.nullable.then(|| {
        (0..rows)
            .map(|_| u8::from(rng.below(4) != 0))
            .collect::<Vec<_>>()
    });
    let value = |rng: &mut Rng, n: u64| -> Vec<u8> {
        (0..n * size)
            .map(|_| match col.datatype {
                Datatype::Bool => rng.below(2) as u8,
                // Codes 0..4 (3 has no label).
                Datatype::UInt8 => rng.below(4) as u8,
                _ => rng.next() as u8,
            })
            .collect()
    };
    if col.is_var() {
        let mut values = Vec::new();
        let mut bounds = vec![0];
        for _ in 0..rows {
            let n = rng.below(4);
            values.extend(value(rng, n));
            bounds.push(values.len() as u64);
        }
        Cells {
            values,
            bounds: Some(bounds),
            validity,
        }
    } else {
        Cells {
            values: value(rng, rows * u64::from(col.cell_val_num)),
            bounds: None,
            validity,
        }
    }
}

/// A table of `columns()` in groups of `rows`, its cells, its `values.bin` by column.
fn table(rows: &[u64], seed: u64) -> (Table, Vec<Vec<Cells>>, Vec<Vec<u8>>) {
    let columns = columns();
    let mut rng = Rng(seed);
    let mut all = Vec::new();
    let mut groups = Vec::new();
    let mut bins = vec![Vec::new(); columns.len()];
    for &n in rows {
        let mut chunks = Vec::new();
        let mut group = Vec::new();
        for (c, col) in columns.iter().enumerate() {
            let cells = cells(col, n, &mut rng);
            let r = cells.as_ref();
            let (null_bytes, empty) = var_counts(col, &r);
            chunks.push(Chunk {
                nulls: null_count(col, &r),
                var_bytes: if col.is_var() {
                    cells.values.len() as u64
                } else {
                    0
                },
                var_start: bins[c].len() as u64,
                null_bytes,
                empty,
                bounds: Some(Bounds {
                    min: vec![0; col.cell_size().max(1) as usize],
                    max: vec![1; col.cell_size().max(1) as usize],
                }),
                stored: None,
            });
            bins[c].extend_from_slice(&cells.values);
            group.push(cells);
        }
        groups.push(Group { rows: n, chunks });
        all.push(group);
    }
    let table = Table {
        columns,
        groups,
        key_value: vec![("k".into(), "v".into())],
        created_by: "fragfs test".into(),
    };
    (table, all, bins)
}

/// The file, every piece filled (stored pages with 0xEE).
fn fill(t: &Table, l: &Layout, cells: &[Vec<Cells>], bins: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in &l.pieces {
        match p {
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::Raw { column, range } => {
                out.extend_from_slice(&bins[*column][range.start as usize..range.end as usize])
            }
            Piece::Body {
                group,
                column,
                at,
                len,
            } => {
                let b = body(t, *group, *column, &cells[*group][*column].as_ref()).unwrap();
                out.extend_from_slice(&b[*at as usize..(*at + *len) as usize]);
            }
            Piece::Stored { len, .. } => out.extend(std::iter::repeat_n(0xee, *len as usize)),
        }
    }
    out
}

#[test]
fn bodies_are_as_long_as_the_layout_promised() {
    for seed in 0..20 {
        let rows = [1 + seed % 7, 0, 17 + seed * 3, 64];
        let (t, cells, bins) = table(&rows, seed);
        let l = layout(&t).unwrap();
        for (g, group) in cells.iter().enumerate() {
            for (c, cell) in group.iter().enumerate() {
                let b = body(&t, g, c, &cell.as_ref()).unwrap();
                let promised: u64 = l
                    .pieces
                    .iter()
                    .filter_map(|p| match p {
                        Piece::Body {
                            group, column, len, ..
                        } if (*group, *column) == (g, c) => Some(*len),
                        _ => None,
                    })
                    .sum();
                assert_eq!(
                    b.len() as u64,
                    promised,
                    "seed {seed}, group {g}, column {c}"
                );
            }
        }
        let file = fill(&t, &l, &cells, &bins);
        assert_eq!(file.len() as u64, l.size);
        assert_eq!(l.pieces.iter().map(Piece::len).sum::<u64>(), l.size);
        assert_eq!(&file[..4], b"PAR1");
        assert_eq!(&file[file.len() - 4..], b"PAR1");
    }
}

#[test]
fn raw_pieces_are_the_rows_of_values_bin() {
    let (t, _, _) = table(&[3, 5], 1);
    let l = layout(&t).unwrap();
    let raw: Vec<_> = l
        .pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Raw { column, range } => Some((*column, range.clone())),
            _ => None,
        })
        .collect();
    let vi = &t.groups[1].chunks[9];
    assert_eq!(
        raw,
        [
            (1, 0..12),
            (4, 0..24),
            (6, 0..9),
            (7, 0..24),
            (9, 0..t.groups[0].chunks[9].var_bytes),
            (11, 0..24),
            (1, 12..32),
            (4, 24..64),
            (6, 9..24),
            (7, 24..64),
            (9, vi.var_start..vi.var_start + vi.var_bytes),
            (11, 24..64),
        ]
        .into_iter()
        .filter(|(_, r)| !r.is_empty())
        .collect::<Vec<_>>()
    );
}

#[test]
fn cells_that_disagree_with_the_facts_are_errors_not_panics() {
    let (t, cells, _) = table(&[9], 3);
    for (c, good) in cells[0].iter().enumerate() {
        assert!(body(&t, 0, c, &good.as_ref()).is_ok());
        let mut short = good.clone();
        short.values.pop();
        if !good.values.is_empty() {
            assert!(body(&t, 0, c, &short.as_ref()).is_err(), "column {c}");
        }
        let mut long = good.clone();
        long.values.push(0);
        assert!(body(&t, 0, c, &long.as_ref()).is_err(), "column {c}");
        if let Some(v) = &good.validity {
            let mut bad = good.clone();
            bad.validity = Some(v[1..].to_vec());
            assert!(body(&t, 0, c, &bad.as_ref()).is_err(), "column {c}");
            let mut flipped = good.clone();
            flipped.validity = Some(v.iter().map(|&b| u8::from(b == 0)).collect());
            assert!(body(&t, 0, c, &flipped.as_ref()).is_err(), "column {c}");
            let mut none = good.clone();
            none.validity = None;
            assert!(body(&t, 0, c, &none.as_ref()).is_err(), "column {c}");
        }
        if let Some(b) = &good.bounds {
            let mut fewer = good.clone();
            fewer.bounds = Some(b[1..].to_vec());
            assert!(body(&t, 0, c, &fewer.as_ref()).is_err(), "column {c}");
            let mut backwards = good.clone();
            backwards.bounds = Some(b.iter().rev().copied().collect());
            let _ = body(&t, 0, c, &backwards.as_ref());
            let mut past = good.clone();
            past.bounds = Some(b.iter().map(|&x| x + 1000).collect());
            assert!(body(&t, 0, c, &past.as_ref()).is_err(), "column {c}");
        }
    }
    // Out of range indices.
    assert!(body(&t, 1, 0, &cells[0][0].as_ref()).is_err());
    assert!(body(&t, 0, 99, &cells[0][0].as_ref()).is_err());
}

#[test]
fn facts_that_cannot_be_are_errors() {
    let (mut t, _, _) = table(&[4], 5);
    t.groups[0].chunks[1].nulls = 1; // a REQUIRED column with a null
    assert!(layout(&t).is_err());
    let (mut t, _, _) = table(&[4], 5);
    t.groups[0].chunks[8].var_bytes += 3; // not whole doubles
    assert!(layout(&t).is_err());
    let (mut t, _, _) = table(&[4], 5);
    t.groups[0].chunks.pop();
    assert!(layout(&t).is_err());
    let (mut t, _, _) = table(&[4], 5);
    t.columns.clear();
    assert!(layout(&t).is_err());
}

#[test]
fn days_are_raw_int64_so_nat_and_far_days_pass_through() {
    // TileDB's fill of DATETIME_DAY is i64::MIN (NaT), and days past ±2^31 are legal:
    // neither fits Parquet's DATE (i32), so the column is a plain INT64.
    let (t, _, _) = table(&[2], 5);
    let day = kind::leaf(&t.columns[4]).unwrap();
    assert_eq!(day.kind.physical, kind::Physical::Int64);
    assert_eq!(day.kind.logical, None);
    assert_eq!(day.kind.unit, Some(Datatype::DatetimeDay.name()));
    assert!(day.raw_values());
    let l = layout(&t).unwrap();
    assert!(l
        .pieces
        .iter()
        .any(|p| matches!(p, Piece::Raw { column: 4, range } if *range == (0..16))));
}

#[test]
fn a_page_over_2_gib_is_an_error_not_a_wrapped_size() {
    let (mut t, _, _) = table(&[1], 5);
    t.columns.truncate(2);
    t.groups[0].chunks.truncate(2);
    t.groups[0].rows = 1 << 29; // 2^29 × 4 bytes of i32: 2 GiB
    t.groups[0].chunks[0].nulls = 0;
    assert!(layout(&t).is_err());
    t.groups[0].rows = (1 << 29) - 1000;
    t.columns[0].nullable = false;
    assert!(layout(&t).is_ok());
    t.groups[0].rows = u64::MAX;
    assert!(layout(&t).is_err());
}

#[test]
fn no_groups_is_a_file_of_the_schema_alone() {
    let (mut t, _, _) = table(&[], 0);
    t.groups.clear();
    let l = layout(&t).unwrap();
    assert_eq!(l.pieces.len(), 1);
    let (t, _, _) = table(&[0, 0], 0);
    assert_eq!(layout(&t).unwrap().pieces.len(), 1);
}

#[test]
fn stored_pages_have_a_header_each_and_must_cover_the_rows() {
    let (mut t, _, _) = table(&[4], 5);
    let pages = vec![
        StoredPage {
            compressed: 7,
            uncompressed: 8,
        },
        StoredPage {
            compressed: 5,
            uncompressed: 8,
        },
    ];
    t.groups[0].chunks[1].stored = Some(Stored {
        codec: Codec::Zstd,
        pages: pages.clone(),
    });
    let l = layout(&t).unwrap();
    let stored: Vec<_> = l
        .pieces
        .iter()
        .filter(|p| matches!(p, Piece::Stored { .. }))
        .cloned()
        .collect();
    assert_eq!(
        stored,
        [
            Piece::Stored {
                group: 0,
                column: 1,
                page: 0,
                len: 7
            },
            Piece::Stored {
                group: 0,
                column: 1,
                page: 1,
                len: 5
            }
        ]
    );
    // Pages that are not the rows, or not whole cells, or of a nullable column.
    t.groups[0].chunks[1].stored.as_mut().unwrap().pages[1].uncompressed = 4;
    assert!(layout(&t).is_err());
    let mut odd = pages.clone();
    odd[0].uncompressed = 7;
    odd[1].uncompressed = 9;
    t.groups[0].chunks[1].stored.as_mut().unwrap().pages = odd;
    assert!(layout(&t).is_err());
    t.groups[0].chunks[1].stored = None;
    t.groups[0].chunks[0].stored = Some(Stored {
        codec: Codec::Lz4,
        pages,
    });
    assert!(layout(&t).is_err());
}

/// Checks where `t`'s chunks are: a chunk of ≥ ALIGN_FROM bytes, or one after such a
/// chunk, starts on ALIGN with zero bytes before it; every other chunk, and the footer,
/// right where the one before ended (the footer aligned after a large last chunk).
/// Returns how many chunks were aligned.
fn check_alignment(t: &Table, cells: &[Vec<Cells>], bins: &[Vec<u8>]) -> usize {
    let (l, groups) = with_groups(t).unwrap();
    let file = fill(t, &l, cells, bins);
    let mut end = 4u64;
    let mut before = 0u64;
    let mut aligned = 0;
    for m in groups.iter().flat_map(|g| &g.chunks) {
        assert_eq!(m.dictionary_page.unwrap_or(m.start), m.start);
        assert!(m.data_page >= m.start && m.data_page < m.start + m.compressed);
        if m.compressed >= ALIGN_FROM || before >= ALIGN_FROM {
            assert_eq!(m.start % ALIGN, 0, "{m:?}");
            assert!(m.start - end < ALIGN);
            assert!(file[end as usize..m.start as usize].iter().all(|&b| b == 0));
            aligned += 1;
        } else {
            assert_eq!(m.start, end, "{m:?}");
        }
        end = m.start + m.compressed;
        before = m.compressed;
    }
    let n = file.len();
    let footer_len = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as u64;
    let footer = l.size - 8 - footer_len;
    if before >= ALIGN_FROM {
        assert_eq!(footer % ALIGN, 0);
        assert!(file[end as usize..footer as usize].iter().all(|&b| b == 0));
    } else {
        assert_eq!(footer, end);
    }
    aligned
}

#[test]
fn large_chunks_start_on_a_page_and_small_tables_have_no_padding() {
    // Groups of 5000 rows make chunks of 20 KB and more (the i32s) next to small ones
    // (the booleans' bits); the group of 3 rows after them starts aligned, then packs.
    let (t, cells, bins) = table(&[5000, 3, 1200, 7], 9);
    let (l, groups) = with_groups(&t).unwrap();
    let sizes: Vec<u64> = groups
        .iter()
        .flat_map(|g| g.chunks.iter().map(|m| m.compressed))
        .collect();
    assert!(sizes.iter().any(|&s| s >= ALIGN_FROM));
    assert!(sizes.iter().any(|&s| s < 4096));
    let aligned = check_alignment(&t, &cells, &bins);
    assert!(
        aligned > 0 && aligned < sizes.len(),
        "{aligned} of {sizes:?}"
    );
    // The footer's total sizes count chunks, not padding: less than the file.
    let chunks: u64 = sizes.iter().sum();
    assert!(chunks + 8 < l.size);
    // Small tables: no chunk is large, so every chunk follows the one before.
    for seed in 0..5 {
        let (t, cells, bins) = table(&[3, 0, 40 + seed, 64], seed);
        assert_eq!(check_alignment(&t, &cells, &bins), 0);
    }
}
