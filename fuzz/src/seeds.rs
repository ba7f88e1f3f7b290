//! Seeds for the fuzz targets, cut from real TileDB arrays and Filo chunks: each array's
//! files of generic tiles (`generic_tile`), its decoded schemas (`schema`), its footers
//! and metadata payloads with their schema (`fragment_metadata`), and the first tiles of
//! every field file, whole with their pipeline (`chunk_pipeline`) and chunk by chunk for
//! the filter reversed first (`filters`), in the layouts of the target bodies (`lib.rs`).
//! `examples/seed_corpus.rs` writes them out for cargo-fuzz; `tests/fuzz_regressions.rs`
//! (which includes this file with `lib.rs`) runs them, and mutations of them, through
//! the bodies on every test run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fragfs::array::field::Field;
use fragfs::array::fragment::{FragmentMeta, METADATA_FILE};
use fragfs::array::generic_tile::decode_generic_tile;
use fragfs::array::{Array, OpenOptions};
use fragfs::error::Place;
use fragfs::filter::stage_input;
use fragfs::format::chunked::parse_chunks;
use fragfs::format::footer::{footer_location, FooterLocation};
use fragfs::format::generic_tile::GenericTileHeader;
use fragfs::format::{Datatype, Filter, FilterPipeline};
use fragfs::read::tile::{FileRole, TileFile};
use fragfs::storage::{LocalStore, Store};

/// Larger inputs slow the fuzzer down without reaching more code.
pub const MAX_SEED: usize = 64 << 10;
/// Tiles taken from each field file.
pub const TILES_PER_FILE: u64 = 2;

/// Seeds per target, deduplicated by content.
#[derive(Default)]
pub struct Seeds(pub BTreeMap<&'static str, BTreeMap<u64, Vec<u8>>>);

impl Seeds {
    pub fn add(&mut self, target: &'static str, input: Vec<u8>) {
        if input.len() <= MAX_SEED {
            self.0
                .entry(target)
                .or_default()
                .insert(fnv1a(&input), input);
        }
    }
}

pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Array folders: those with a `__schema/` folder or an `__array_schema.tdb`.
pub fn find_arrays(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("__schema").is_dir() || dir.join("__array_schema.tdb").is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        find_arrays(&d, out);
    }
}

pub fn seed_array(root: &Path, seeds: &mut Seeds) -> fragfs::Result<()> {
    // Every encrypted array of the fixtures and the shared corpus uses this key; it is
    // ignored where nothing is encrypted.
    let key = Some(super::KEY);
    // Files that are generic tiles back to back, whole.
    for path in files_under(root) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let in_meta_dir = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == "__schema" || d == "__fragment_meta" || d == "__meta");
        if in_meta_dir
            || name == METADATA_FILE
            || name.ends_with(".del")
            || name == "__array_schema.tdb"
        {
            seeds.add("generic_tile", std::fs::read(&path).unwrap_or_default());
        }
    }
    let array = Array::open(
        std::sync::Arc::new(LocalStore::open(root)?),
        OpenOptions { key },
    )?;
    let mut schema_payloads = BTreeMap::new();
    for s in &array.schemas {
        let bytes = std::fs::read(root.join(&s.rel_path)).unwrap_or_default();
        let (_, payload) = decode_generic_tile(&bytes, key, &Place::file(s.rel_path.as_str()))?;
        seeds.add("schema", payload.clone());
        schema_payloads.insert(s.name.clone(), payload);
    }
    for fragment in &array.fragments {
        let meta = match fragment.meta(&array.schemas) {
            Ok(meta) => meta,
            Err(e) => {
                eprintln!("seed_corpus: {}: {e}", fragment.rel_dir);
                continue;
            }
        };
        if let Some(schema) = schema_payloads.get(&meta.schema_name) {
            seed_metadata(
                fragment.timestamps.version,
                &meta,
                schema,
                &root.join(fragment.file_key(METADATA_FILE)),
                seeds,
            );
        }
        for field in meta.fields.iter().filter(|f| f.stored) {
            for role in roles(field) {
                if let Ok(file) = TileFile::open(fragment, &meta, field, role) {
                    seed_tiles(&*fragment.store, &file, &meta, seeds);
                }
            }
        }
    }
    Ok(())
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn roles(field: &Field) -> Vec<FileRole> {
    let mut roles = vec![FileRole::Data];
    if field.is_var() {
        roles.push(FileRole::Var);
    }
    if field.nullable {
        roles.push(FileRole::Validity);
    }
    roles
}

/// `fragment_metadata` seeds: the footer (v3+) or the whole-file payload (v1-2), and the
/// payload of every generic tile in the metadata file, each after the schema.
fn seed_metadata(
    name_version: u32,
    meta: &FragmentMeta,
    schema: &[u8],
    path: &Path,
    seeds: &mut Seeds,
) {
    let Ok(file) = std::fs::read(path) else {
        return;
    };
    let with_schema = |rest: &[u8]| {
        let mut input = vec![name_version.min(255) as u8];
        input.extend((schema.len() as u16).to_le_bytes());
        input.extend(schema);
        input.extend(rest);
        input
    };
    if schema.len() > usize::from(u16::MAX) {
        return;
    }
    if name_version >= 3 {
        let footer = match footer_location(name_version, &meta.schema) {
            FooterLocation::Computed(len) => {
                file.len().checked_sub(len as usize).map(|s| &file[s..])
            }
            FooterLocation::Trailing => file.len().checked_sub(8).and_then(|at| {
                let len = u64::from_le_bytes(file[at..].try_into().ok()?);
                Some(&file[at.checked_sub(len as usize)?..at])
            }),
        };
        if let Some(footer) = footer {
            seeds.add("fragment_metadata", with_schema(footer));
        }
    }
    let mut offset = 0;
    while let Ok(header) = GenericTileHeader::parse(&file[offset..]) {
        if let Ok((_, payload)) =
            decode_generic_tile(&file[offset..], meta.key(), &Place::file("seed"))
        {
            seeds.add("fragment_metadata", with_schema(&payload));
        }
        match offset.checked_add(header.end() as usize) {
            Some(end) if end < file.len() => offset = end,
            _ => break,
        }
    }
}

/// `chunk_pipeline` seeds (whole tiles with their pipeline) and `filters` seeds (each
/// chunk with the filter that is reversed first).
fn seed_tiles(store: &dyn Store, file: &TileFile, meta: &FragmentMeta, seeds: &mut Seeds) {
    let ctx = &file.ctx;
    let flags = u8::from(ctx.key.is_some());
    for k in 0..meta.tile_count.min(TILES_PER_FILE) {
        let Ok(tile) = file
            .tile_span(k)
            .and_then(|(start, len)| store.read_range(&file.key, start, len))
        else {
            continue;
        };
        let mut input = vec![ctx.field_type.id(), ctx.format_version as u8];
        input.extend((ctx.cell_size.min(u16::MAX.into()) as u16).to_le_bytes());
        input.push(flags);
        input.extend(serialize_pipeline(&file.pipeline));
        input.extend(&tile);
        seeds.add("chunk_pipeline", input);

        let pipeline = &file.pipeline;
        let types = pipeline.input_types(ctx.field_type);
        for chunk in parse_chunks(&tile).unwrap_or_default() {
            let range = |r: std::ops::Range<u64>| &tile[r.start as usize..r.end as usize];
            let (md, data) = (range(chunk.metadata_range()), range(chunk.data_range()));
            // Each filter with the input it really sees: the chunk as stored is the last
            // filter's; an earlier one's is what reversing those after it leaves (a
            // bit-width reduction under a compressor is otherwise never seeded). Its
            // output length is the input of the filter before it, or the chunk's.
            let input = |stage: usize| {
                stage_input(pipeline, ctx, md, data, chunk.unfiltered_len, stage).ok()
            };
            for (stage, (filter, input_type)) in pipeline.filters.iter().zip(&types).enumerate() {
                let Some((stage_md, stage_data)) = input(stage) else {
                    break;
                };
                // Its own header only: the metadata of the filters before it follows.
                let (out_len, own_md) = match stage.checked_sub(1) {
                    None => (chunk.unfiltered_len, &stage_md[..]),
                    Some(before) => {
                        let Some((md_before, out)) = input(before) else {
                            break;
                        };
                        let own = stage_md.len().saturating_sub(md_before.len());
                        (out.len() as u32, &stage_md[..own])
                    }
                };
                let mut seed = vec![
                    filter.id(),
                    input_type.id(),
                    ctx.cell_size.min(255) as u8,
                    ctx.format_version as u8,
                    flags,
                ];
                seed.extend(out_len.to_le_bytes());
                seed.extend((own_md.len().min(u16::MAX.into()) as u16).to_le_bytes());
                seed.extend(filter_options(filter));
                seed.extend(own_md);
                seed.extend(&stage_data);
                seeds.add("filters", seed);
            }
        }
    }
}

/// The 8 option bytes of the `filters` layout (inverse of `filter_from` in `src/lib.rs`).
fn filter_options(filter: &Filter) -> [u8; 8] {
    let mut o = [0u8; 8];
    match filter {
        Filter::DoubleDelta { reinterpret } | Filter::Delta { reinterpret } => {
            o[0] = reinterpret.map_or(Datatype::Any.id(), Datatype::id);
        }
        Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
            o[..4].copy_from_slice(&max_window.to_le_bytes());
        }
        Filter::ScaleFloat {
            scale,
            offset,
            byte_width,
        } => {
            o[..4].copy_from_slice(&(*scale as f32).to_le_bytes());
            o[4..6].copy_from_slice(&(*offset as i16).to_le_bytes());
            o[6] = *byte_width as u8;
        }
        Filter::Webp(w) => {
            o[0] = w.quality as u8;
            o[1] = w.input_format;
            o[2] = u8::from(w.lossless);
            o[3..5].copy_from_slice(&w.y_extent.to_le_bytes());
            o[5..7].copy_from_slice(&w.x_extent.to_le_bytes());
        }
        _ => {}
    }
    o
}

/// A pipeline as a schema stores it (`03-array-schema.md` §5-6), for `FilterPipeline::parse`.
fn serialize_pipeline(p: &FilterPipeline) -> Vec<u8> {
    let mut out = p.max_chunk_size.to_le_bytes().to_vec();
    out.extend((p.filters.len() as u32).to_le_bytes());
    for f in &p.filters {
        let mut o = Vec::new();
        let mut level = |level: i32| {
            o.push(f.id());
            o.extend(level.to_le_bytes());
        };
        match f {
            Filter::Gzip { level: l }
            | Filter::Zstd { level: l }
            | Filter::Lz4 { level: l }
            | Filter::Rle { level: l }
            | Filter::Bzip2 { level: l }
            | Filter::Dictionary { level: l } => level(*l),
            Filter::DoubleDelta { reinterpret } | Filter::Delta { reinterpret } => {
                level(0);
                o.push(reinterpret.map_or(Datatype::Any.id(), Datatype::id));
            }
            Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
                o.extend(max_window.to_le_bytes());
            }
            Filter::ScaleFloat {
                scale,
                offset,
                byte_width,
            } => {
                o.extend(scale.to_le_bytes());
                o.extend(offset.to_le_bytes());
                o.extend(byte_width.to_le_bytes());
            }
            Filter::Webp(w) => {
                o.extend(w.quality.to_le_bytes());
                o.push(w.input_format);
                o.push(u8::from(w.lossless));
                o.extend(w.y_extent.to_le_bytes());
                o.extend(w.x_extent.to_le_bytes());
            }
            _ => {}
        }
        out.push(f.id());
        out.extend((o.len() as u32).to_le_bytes());
        out.extend(o);
    }
    out
}

/// Every `.filo` chunk below `dir`, once per column type (the `filo` target's first byte
/// picks it; with the top bit, the pre-0.3.2 writer).
pub fn seed_filo(dir: &Path, seeds: &mut Seeds) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            seed_filo(&path, seeds);
        } else if path.extension().is_some_and(|e| e == "filo") {
            let Ok(chunk) = std::fs::read(&path) else {
                continue;
            };
            for pick in 0..fragfs::filo::ColumnType::ALL.len() as u8 {
                for version in [0, 0x80] {
                    let mut input = vec![pick | version];
                    input.extend(&chunk);
                    seeds.add("filo", input);
                }
            }
        }
    }
}
