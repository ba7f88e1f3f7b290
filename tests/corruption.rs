//! The corruption suite: deterministic damaged copies of every fixture array (and of a
//! sample of the shared corpus when it is beside the repo), each read in full through
//! the view (what `fragfs cat` serves) and, for a subset, through a real mount.
//!
//! Damage kinds: a truncated data file, truncated metadata, flipped bits in metadata and
//! in data tiles, a zeroed or truncated schema, a missing data or metadata file, huge
//! length/count fields (0xFF..: chunk counts, chunk sizes, generic tile sizes, footer
//! counts and file sizes), and chunk headers claiming more bytes than the tile holds.
//! Positions come from a seeded PRNG and from fragfs's own reading of the intact copy
//! (where tiles and chunks start), so every run damages the same bytes.
//!
//! What every damaged copy must satisfy (the rule checked by [`check_error`]):
//! - no panic, and the whole copy is read within [`WALK_LIMIT`];
//! - every file either reads exactly `size()` bytes, or fails; a JSON file that reads
//!   is valid JSON;
//! - every error is EIO, with a non-empty reason; inside `fragments/<F>/` its message
//!   names the fragment `F` and one of `F`'s files (`__fragment_metadata.tdb` or a data
//!   file); naming a data file it names the tile (`tile N`); a chunk that cannot be
//!   un-filtered is named too (`chunk N`). When only a data file was damaged, the error
//!   names that file. An array that cannot be opened names the damaged schema file;
//! - where every data file of the array is checksummed, a damaged data file never reads
//!   as different bytes: each file reads as in the intact copy or fails, and a bit
//!   flipped in a chunk's data fails as "checksum mismatch" naming file, tile and chunk.
//!   Elsewhere, a flipped bit in unchecksummed data can only give wrong values (nothing
//!   on disk says what they were): then only the sizes are checked;
//! - memory: the decoded-data cache stays within its bound, and the thread reading a copy
//!   never holds more than that bound plus [`MEMORY_SLACK`] (counted by the allocator
//!   below, so a lying header cannot hide behind lazily committed pages).
//!
//! Through a mount (the `fragfs` binary as a daemon, 8 MiB cache), for one copy of each
//! kind per fixture and a flipped bit in every checksummed file: every file reads as
//! through the view or fails with EIO where the view fails, the tree shown is the view's,
//! the daemon still serves a good file afterwards, each EIO is exactly one ERROR line in
//! the log that keeps the rule above (a checksummed tile's says "checksum mismatch" and
//! names file, tile and chunk), the daemon's peak resident memory (VmHWM) stays under the
//! cache plus 64 MiB, and `fragfs cat` of a failing file prints the view's error in one
//! line. An array that cannot be opened refuses to mount, in one line naming the file.
//!
//! `CORRUPTION_FAILURES=<file>` writes every broken promise there (the assertion shows 40).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use fragfs::array::fragment::METADATA_FILE;
use fragfs::array::fragment::{Fragment, MetadataLayout};
use fragfs::array::generic_tile::decode_generic_tile;
use fragfs::array::OpenOptions;
use fragfs::format::generic_tile::GenericTileHeader;
use fragfs::format::Filter;
use fragfs::read::tile::{FileRole, TileFile};
use fragfs::view::{ArrayTree, FileTree, Ino, ROOT};
use fragfs::Error;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Memory: an allocator that counts, per thread, the bytes it holds and their peak.

struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = HELD.try_with(|h| {
        let now = h.get() + delta;
        h.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Starts counting this thread's peak from what it holds now.
fn reset_peak() {
    HELD.with(|h| h.set(0));
    PEAK.with(|p| p.set(0));
}

fn peak() -> u64 {
    PEAK.with(|p| p.get().max(0) as u64)
}

// ---------------------------------------------------------------------------------------
// Limits.

/// The view's decoded-data cache in the walks (small, so eviction happens, but holding
/// the largest JSON file of the fixtures, 1.6 MB).
const VIEW_CACHE: u64 = 4 << 20;
/// What reading a copy may hold beyond the cache: a few decoded chunks and the
/// metadata of one fragment, never what a lying header claims.
const MEMORY_SLACK: u64 = 64 << 20;
/// One damaged copy, read in full, must be done within this: what it catches is a lying
/// header that makes a read loop or crawl for good (a 2^64 chunk count walked chunk by
/// chunk), not a slow machine. A copy reads in under half a second on an idle one; the
/// test binaries of the suite run side by side on two cores, where a mount's walk once
/// took over 15 s (the former limit), so the limit leaves two orders of magnitude.
const WALK_LIMIT: Duration = Duration::from_secs(120);
/// Through a mount: the daemon's cache, and what its peak resident memory may exceed it by.
const MOUNT_CACHE: &str = "8M";
const MOUNT_RSS_LIMIT: u64 = (8 << 20) + (64 << 20);

// ---------------------------------------------------------------------------------------
// A deterministic PRNG (xorshift64*).

struct Rng(u64);

impl Rng {
    fn new(seed: &str) -> Rng {
        let mut h = DefaultHasher::new();
        h.write(seed.as_bytes());
        Rng(h.finish() | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len() as u64) as usize)
    }
}

// ---------------------------------------------------------------------------------------
// The arrays damaged.

struct Source {
    /// `tiledb/dense_basic`, `corpus/v11/sparse_1d`, ...
    label: String,
    array: PathBuf,
    expected: Value,
    /// Every data file of every fragment is under a checksum (`checksums` fixture).
    all_checksummed: bool,
    /// How many fragments to damage (the first and the last, then others).
    fragments: usize,
}

fn sources() -> Vec<Source> {
    let mut out = Vec::new();
    let groups = [
        ("tiledb", fixtures()),
        ("handbuilt", handbuilt()),
        ("tiledb-test-inputs", tiledb_test_inputs()),
    ];
    for (group, dir) in groups {
        for (array, expected) in expected_files(&dir) {
            let name = array.file_name().unwrap().to_string_lossy().into_owned();
            out.push(Source {
                label: format!("{group}/{name}"),
                all_checksummed: name == "checksums",
                array,
                expected,
                fragments: 2,
            });
        }
    }
    let corpus = shared_corpus();
    if !corpus.is_dir() {
        println!(
            "corpus part skipped: {} is absent (the shared corpus lives beside the repo)",
            corpus.display()
        );
        return out;
    }
    // A few arrays per version folder, always the encrypted ones, the rest by seed.
    for (version, dir) in corpus_versions(&corpus) {
        let folder = format!("v{version}");
        let arrays = expected_files(&dir);
        let mut rng = Rng::new(&folder);
        let mut chosen = BTreeSet::new();
        for (i, (array, _)) in arrays.iter().enumerate() {
            if array.to_string_lossy().contains("encrypted") {
                chosen.insert(i);
                break;
            }
        }
        while chosen.len() < 3.min(arrays.len()) {
            chosen.insert(rng.below(arrays.len() as u64) as usize);
        }
        for i in chosen {
            let (array, expected) = arrays[i].clone();
            let name = array.file_name().unwrap().to_string_lossy().into_owned();
            out.push(Source {
                label: format!("corpus/{folder}/{name}"),
                array,
                expected,
                all_checksummed: false,
                fragments: 1,
            });
        }
    }
    out
}

fn options(expected: &Value) -> OpenOptions {
    let key = expected["encryption"]["key"]
        .as_str()
        .map(|k| fragfs::array::parse_key(k).unwrap());
    OpenOptions { key }
}

// ---------------------------------------------------------------------------------------
// Damage.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    TruncatedData,
    TruncatedMetadata,
    FlippedMetadata,
    FlippedData,
    ZeroedSchema,
    TruncatedSchema,
    MissingDataFile,
    MissingMetadata,
    HugeDataField,
    HugeMetadataField,
    ChunkOverclaim,
    ChecksummedData,
}

#[derive(Debug, Clone)]
enum Edit {
    Truncate(u64),
    /// Bit positions.
    Flip(Vec<u64>),
    Overwrite(u64, Vec<u8>),
    Remove,
    /// The whole new content.
    Replace(Vec<u8>),
}

/// One damaged copy to make.
#[derive(Debug, Clone)]
struct Damage {
    kind: Kind,
    /// Relative to the array root.
    file: String,
    edit: Edit,
    /// The fragment the file belongs to, if any.
    fragment: Option<String>,
    /// A data file (not metadata, not schema).
    data_file: bool,
    /// For damage aimed at one chunk: (tile, chunk) the error must name.
    chunk: Option<(u64, usize)>,
    what: String,
}

impl Damage {
    fn apply(&self, array: &Path) {
        let path = array.join(&self.file);
        match &self.edit {
            Edit::Truncate(len) => std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(*len)
                .unwrap(),
            Edit::Flip(bits) => {
                let mut bytes = std::fs::read(&path).unwrap();
                for &b in bits {
                    bytes[(b / 8) as usize] ^= 1 << (b % 8);
                }
                std::fs::write(&path, bytes).unwrap();
            }
            Edit::Overwrite(at, new) => {
                let mut bytes = std::fs::read(&path).unwrap();
                let at = *at as usize;
                let end = (at + new.len()).min(bytes.len());
                bytes[at..end].copy_from_slice(&new[..end - at]);
                std::fs::write(&path, bytes).unwrap();
            }
            Edit::Remove => std::fs::remove_file(&path).unwrap(),
            Edit::Replace(bytes) => std::fs::write(&path, bytes).unwrap(),
        }
    }
}

/// One data file of a fragment, located by fragfs in the intact array.
struct DataFileInfo {
    rel: String,
    len: u64,
    /// (start, length) of every tile.
    tiles: Vec<(u64, u64)>,
    /// Per tile, the data range (absolute) of its chunk 0, when it has chunks.
    chunk0: Vec<Option<(u64, u64)>>,
    /// The last filter (the first reversed) is a checksum.
    outer_checksum: bool,
}

struct FragmentInfo {
    name: String,
    rel_dir: String,
    metadata_len: u64,
    /// Footer values and generic tile header fields worth overwriting: position, the
    /// huge value's bytes, what it is.
    metadata_targets: Vec<(u64, Vec<u8>, String)>,
    /// Whole metadata files whose lists claim huge values, and what they claim.
    metadata_rewrites: Vec<(Vec<u8>, String)>,
    data: Vec<DataFileInfo>,
    /// File names in the fragment folder.
    files: Vec<String>,
}

/// A generic tile holding `payload` unfiltered.
fn unfiltered_generic_tile(version: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut tile = version.to_le_bytes().to_vec();
    tile.extend((8 + 12 + payload.len() as u64).to_le_bytes()); // persisted size
    tile.extend((payload.len() as u64).to_le_bytes()); // tile size
    tile.push(4); // datatype
    tile.extend(1u64.to_le_bytes()); // cell size
    tile.push(0); // not encrypted
    tile.extend(8u32.to_le_bytes()); // pipeline: max chunk size, no filters
    tile.extend(65536u32.to_le_bytes());
    tile.extend(0u32.to_le_bytes());
    tile.extend(1u64.to_le_bytes()); // one chunk
    tile.extend(len.to_le_bytes());
    tile.extend(len.to_le_bytes());
    tile.extend(0u32.to_le_bytes());
    tile.extend_from_slice(payload);
    tile
}

/// `metadata` (a file ending with its footer and the footer's length, v10+) with the
/// generic tile at `at` decoded, patched and stored again unfiltered just before the
/// footer, whose offset to it is updated. `None` when that offset is not unique there.
fn rewrite_generic_tile(
    metadata: &[u8],
    at: u64,
    key: Option<[u8; 32]>,
    patch: impl Fn(&mut Vec<u8>),
) -> Option<Vec<u8>> {
    let tile = metadata.get(at as usize..)?;
    let header = GenericTileHeader::parse(tile).ok()?;
    let end = (header.header_len + header.persisted_size) as usize;
    let (_, mut payload) = decode_generic_tile(
        tile.get(..end)?,
        key,
        &fragfs::error::Place::file("rewrite"),
    )
    .ok()?;
    patch(&mut payload);
    let n = metadata.len();
    let footer_len = u64::from_le_bytes(metadata[n - 8..].try_into().ok()?) as usize;
    let footer_start = n.checked_sub(8 + footer_len)?;
    let mut footer = metadata[footer_start..n - 8].to_vec();
    let hits: Vec<usize> = (0..footer.len().saturating_sub(7))
        .filter(|&i| footer[i..i + 8] == at.to_le_bytes())
        .collect();
    let [hit] = hits[..] else { return None };
    footer[hit..hit + 8].copy_from_slice(&(footer_start as u64).to_le_bytes());
    let mut out = metadata[..footer_start].to_vec();
    out.extend(unfiltered_generic_tile(header.version, &payload));
    out.extend(footer);
    out.extend((footer_len as u64).to_le_bytes());
    Some(out)
}

fn fragment_info(view: &ArrayTree, fragment: &Fragment) -> FragmentInfo {
    let meta = fragment.meta(&view.array().schemas).unwrap();
    let mut data: BTreeMap<String, DataFileInfo> = BTreeMap::new();
    for field in meta.fields.iter().filter(|f| f.stored) {
        let mut roles = vec![FileRole::Data];
        if field.is_var() {
            roles.push(FileRole::Var);
        }
        if field.nullable {
            roles.push(FileRole::Validity);
        }
        for role in roles {
            let tf = TileFile::open(fragment, &meta, field, role).unwrap();
            let rel = format!("{}/{}", fragment.rel_dir, tf.file_name);
            let Ok(file_len) = fragment.store.size(&tf.key) else {
                continue;
            };
            if data.contains_key(&rel) {
                continue;
            }
            let mut tiles = Vec::new();
            let mut chunk0 = Vec::new();
            for k in 0..meta.tile_count {
                let (start, len) = tf.tile_span(k).unwrap();
                tiles.push((start, len));
                let first = tf
                    .chunks(k, file_len, false)
                    .unwrap()
                    .chunks
                    .first()
                    .map(|c| {
                        let r = c.data_range();
                        (r.start, r.end - r.start)
                    });
                chunk0.push(first.filter(|&(_, n)| n > 0));
            }
            let outer_checksum = matches!(
                tf.pipeline.filters.last(),
                Some(Filter::ChecksumMd5 | Filter::ChecksumSha256)
            );
            data.insert(
                rel.clone(),
                DataFileInfo {
                    rel,
                    len: file_len,
                    tiles,
                    chunk0,
                    outer_checksum,
                },
            );
        }
    }
    let metadata = fragment
        .store
        .read_all(&fragment.file_key(METADATA_FILE))
        .unwrap();
    let mut targets = Vec::new();
    // Footer values: the last occurrence of each value's bytes (the footer ends the file).
    let f = &meta.footer;
    let mut values: Vec<(u64, String)> = vec![
        (f.sparse_tile_num, "sparse tile count".into()),
        (f.last_tile_cell_num, "last tile cell count".into()),
        (f.rtree_offset, "R-tree offset".into()),
    ];
    for (i, &v) in f.file_sizes.iter().enumerate() {
        values.push((v, format!("file size of slot {i}")));
    }
    for (i, &v) in f.file_var_sizes.iter().enumerate() {
        values.push((v, format!("var file size of slot {i}")));
    }
    for (i, &v) in f.tile_offsets_offsets.iter().enumerate() {
        values.push((v, format!("tile offsets offset of slot {i}")));
    }
    for (v, what) in values {
        // Small values are too ambiguous to find by their bytes.
        if v < 16 {
            continue;
        }
        let needle = v.to_le_bytes();
        if let Some(at) = metadata.windows(8).rposition(|w| w == needle) {
            targets.push((at as u64, vec![0xFF; 8], format!("footer {what}")));
        }
    }
    // The high end of each dimension's non-empty domain, made the largest positive value
    // (dense fragments: trillions of cells that no tile holds).
    for (d, (lo, hi)) in f.non_empty_domain.iter().enumerate() {
        let needle = [lo.as_slice(), hi.as_slice()].concat();
        if needle.len() < 8 || hi.is_empty() {
            continue;
        }
        if let Some(at) = metadata.windows(needle.len()).rposition(|w| w == needle) {
            let mut huge = vec![0xFF; hi.len()];
            huge[hi.len() - 1] = 0x7F;
            targets.push((
                (at + lo.len()) as u64,
                huge,
                format!("footer non-empty domain high of dimension {d}"),
            ));
        }
    }
    // Generic tile headers of the lists: persisted size, tile size, first chunk's size.
    let mut tile_at: Vec<(u64, String)> = Vec::new();
    for (i, &at) in f.tile_offsets_offsets.iter().enumerate() {
        tile_at.push((at, format!("tile offsets of slot {i}")));
    }
    for (i, &at) in f.tile_var_sizes_offsets.iter().enumerate() {
        tile_at.push((at, format!("tile var sizes of slot {i}")));
    }
    if f.version >= 3 {
        tile_at.push((f.rtree_offset, "R-tree".into()));
    }
    for (at, what) in tile_at {
        let at = at as usize;
        let Some(header) = metadata.get(at..at + 34) else {
            continue;
        };
        let pipeline_len = u32::from_le_bytes(header[30..34].try_into().unwrap()) as usize;
        targets.push((
            at as u64 + 4,
            vec![0xFF; 8],
            format!("persisted size of the {what}"),
        ));
        targets.push((
            at as u64 + 12,
            vec![0xFF; 8],
            format!("tile size of the {what}"),
        ));
        let chunk = at + 34 + pipeline_len;
        if chunk + 12 <= metadata.len() {
            targets.push((
                chunk as u64,
                vec![0xFF; 8],
                format!("chunk count of the {what}"),
            ));
            targets.push((
                chunk as u64 + 8,
                vec![0xFF; 4],
                format!("chunk 0 size of the {what}"),
            ));
        }
    }
    // Lists that claim huge values (v10+, where the footer's length ends the file): the
    // first var tile of a var field 1 TiB long, a tile offsets list of 0xFF.. entries.
    let mut rewrites = Vec::new();
    if meta.layout == MetadataLayout::TrailingFooter {
        let key = meta.key();
        if let Some(field) = meta.fields.iter().find(|f| f.stored && f.is_var()) {
            let at = f.tile_var_sizes_offsets.get(field.slot).copied();
            let huge = |p: &mut Vec<u8>| {
                if p.len() >= 16 {
                    p[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
                }
            };
            if let Some(bytes) = at.and_then(|at| rewrite_generic_tile(&metadata, at, key, huge)) {
                let what = format!("var tile 0 of {} claims 1 TiB", field.var_file());
                rewrites.push((bytes, what));
            }
        }
        if let Some(field) = meta.fields.iter().find(|f| f.stored) {
            let at = f.tile_offsets_offsets.get(field.slot).copied();
            let count = |p: &mut Vec<u8>| p[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            if let Some(bytes) = at.and_then(|at| rewrite_generic_tile(&metadata, at, key, count)) {
                let what = format!("tile offsets of {} count 0xFF..", field.data_file());
                rewrites.push((bytes, what));
            }
        }
    }
    let mut files: Vec<String> = fragment
        .store
        .list(&fragment.rel_dir)
        .unwrap()
        .into_iter()
        .filter(|e| !e.is_folder())
        .map(|e| e.name)
        .collect();
    files.sort();
    FragmentInfo {
        name: fragment.name.clone(),
        rel_dir: fragment.rel_dir.clone(),
        metadata_len: metadata.len() as u64,
        metadata_targets: targets,
        metadata_rewrites: rewrites,
        data: data.into_values().collect(),
        files,
    }
}

/// 1 to `max` distinct bit positions in bytes `[from, from + len)`.
fn flips(rng: &mut Rng, from: u64, len: u64, max: u64) -> Vec<u64> {
    let n = 1 + rng.below(max);
    let bits: BTreeSet<u64> = (0..n).map(|_| from * 8 + rng.below(len * 8)).collect();
    bits.into_iter().collect()
}

/// The damaged copies to make of one source, and what is known of its fragments.
fn plan(source: &Source, view: &ArrayTree) -> (Vec<Damage>, Vec<FragmentInfo>) {
    let mut rng = Rng::new(&source.label);
    let mut out = Vec::new();
    let array = view.array();
    let fragments = &array.fragments;
    let mut chosen: Vec<usize> = Vec::new();
    for i in [0, fragments.len().saturating_sub(1)]
        .into_iter()
        .chain(1..fragments.len())
    {
        if i < fragments.len() && !chosen.contains(&i) && chosen.len() < source.fragments {
            chosen.push(i);
        }
    }
    let infos: Vec<FragmentInfo> = fragments.iter().map(|f| fragment_info(view, f)).collect();
    for &i in &chosen {
        let info = &infos[i];
        let metadata = format!("{}/__fragment_metadata.tdb", info.rel_dir);
        let d = |kind, file: &str, edit, data_file, what: String| Damage {
            kind,
            file: file.to_string(),
            edit,
            fragment: Some(info.name.clone()),
            data_file,
            chunk: None,
            what,
        };
        // Data files: truncated, flipped, removed, huge chunk fields, over-long chunks.
        let files: Vec<&DataFileInfo> = info.data.iter().filter(|f| f.len > 0).collect();
        if let Some(f) = rng.pick(&files) {
            let len = rng.below(f.len);
            out.push(d(
                Kind::TruncatedData,
                &f.rel,
                Edit::Truncate(len),
                true,
                format!("{} cut to {len} of {} bytes", f.rel, f.len),
            ));
        }
        for _ in 0..3 {
            if let Some(f) = rng.pick(&files) {
                let bits = flips(&mut rng, 0, f.len, 3);
                out.push(d(
                    Kind::FlippedData,
                    &f.rel,
                    Edit::Flip(bits.clone()),
                    true,
                    format!("{} bits {bits:?} flipped", f.rel),
                ));
            }
        }
        if let Some(f) = rng.pick(&info.data) {
            out.push(d(
                Kind::MissingDataFile,
                &f.rel,
                Edit::Remove,
                true,
                format!("{} removed", f.rel),
            ));
        }
        if let Some(f) = rng.pick(&files) {
            let tiles: Vec<u64> = (0..f.tiles.len() as u64)
                .filter(|&k| f.tiles[k as usize].1 >= 20)
                .collect();
            if let Some(&k) = rng.pick(&tiles) {
                let (start, len) = f.tiles[k as usize];
                let fields: [(u64, usize, &str); 4] = [
                    (0, 8, "chunk count"),
                    (8, 4, "chunk 0 unfiltered size (a 4 GiB chunk)"),
                    (12, 4, "chunk 0 filtered size"),
                    (16, 4, "chunk 0 metadata size"),
                ];
                for (at, width, name) in fields {
                    let mut dmg = d(
                        Kind::HugeDataField,
                        &f.rel,
                        Edit::Overwrite(start + at, vec![0xFF; width]),
                        true,
                        format!("{} tile {k}: {name} set to 0xFF..", f.rel),
                    );
                    dmg.chunk = Some((k, 0));
                    out.push(dmg);
                }
                // Chunk 0 claims more filtered bytes than the tile holds (for the last
                // tile: more than the file holds).
                let md_len = {
                    let bytes = std::fs::read(source.array.join(&f.rel)).unwrap();
                    let at = (start + 16) as usize;
                    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as u64
                };
                let room = len.saturating_sub(20 + md_len);
                let claim = (room + 1 + rng.below(4096)).min(u32::MAX as u64) as u32;
                let mut dmg = d(
                    Kind::ChunkOverclaim,
                    &f.rel,
                    Edit::Overwrite(start + 12, claim.to_le_bytes().to_vec()),
                    true,
                    format!(
                        "{} tile {k}: chunk 0 claims {claim} bytes, {room} exist",
                        f.rel
                    ),
                );
                dmg.chunk = Some((k, 0));
                out.push(dmg);
            }
        }
        // Metadata: truncated (anywhere, and inside the footer), flipped, huge fields,
        // removed.
        let m = info.metadata_len;
        for len in [rng.below(m), m - 1 - rng.below(m.min(64))] {
            out.push(d(
                Kind::TruncatedMetadata,
                &metadata,
                Edit::Truncate(len),
                false,
                format!("{metadata} cut to {len} of {m} bytes"),
            ));
        }
        for _ in 0..3 {
            let bits = flips(&mut rng, 0, m, 4);
            out.push(d(
                Kind::FlippedMetadata,
                &metadata,
                Edit::Flip(bits.clone()),
                false,
                format!("{metadata} bits {bits:?} flipped"),
            ));
        }
        let mut targets: Vec<&(u64, Vec<u8>, String)> = info.metadata_targets.iter().collect();
        for _ in 0..6 {
            if targets.is_empty() {
                break;
            }
            // The non-empty domain always, when there is one; the rest by seed.
            let i = targets
                .iter()
                .position(|t| t.2.contains("non-empty domain"))
                .unwrap_or_else(|| rng.below(targets.len() as u64) as usize);
            let (at, huge, what) = targets.remove(i);
            out.push(d(
                Kind::HugeMetadataField,
                &metadata,
                Edit::Overwrite(*at, huge.clone()),
                false,
                format!("{metadata}: {what} (byte {at}) set to 0xFF.."),
            ));
        }
        for (bytes, what) in &info.metadata_rewrites {
            out.push(d(
                Kind::HugeMetadataField,
                &metadata,
                Edit::Replace(bytes.clone()),
                false,
                format!("{metadata}: {what}"),
            ));
        }
        out.push(d(
            Kind::MissingMetadata,
            &metadata,
            Edit::Remove,
            false,
            format!("{metadata} removed"),
        ));
        // Checksummed tiles: a bit flipped in chunk 0's data of each tile.
        for f in info.data.iter().filter(|f| f.outer_checksum) {
            for (k, c) in f.chunk0.iter().enumerate() {
                let Some((start, len)) = *c else { continue };
                let bit = start * 8 + rng.below(len * 8);
                let mut dmg = d(
                    Kind::ChecksummedData,
                    &f.rel,
                    Edit::Flip(vec![bit]),
                    true,
                    format!("{} tile {k} chunk 0: data bit {bit} flipped", f.rel),
                );
                dmg.chunk = Some((k as u64, 0));
                out.push(dmg);
            }
        }
    }
    // The schema: the latest schema file zeroed, or cut in half.
    let schema = array.latest_schema().rel_path.clone();
    let len = std::fs::metadata(source.array.join(&schema)).unwrap().len();
    for (kind, edit) in [
        (
            Kind::ZeroedSchema,
            Edit::Overwrite(0, vec![0; len as usize]),
        ),
        (Kind::TruncatedSchema, Edit::Truncate(len / 2)),
    ] {
        out.push(Damage {
            kind,
            file: schema.clone(),
            what: format!("{schema}: {kind:?}"),
            edit,
            fragment: None,
            data_file: false,
            chunk: None,
        });
    }
    (out, infos)
}

// ---------------------------------------------------------------------------------------
// Reading a whole tree.

/// An error seen in a walk, kept as what the rules look at.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    message: String,
    errno: i32,
    /// The reason without its context (empty when there is none).
    reason: String,
    filter: bool,
}

impl Seen {
    fn of(path: &str, e: &Error) -> Seen {
        let reason = match e {
            Error::Format { cause, .. } => cause.to_string(),
            Error::Filter { cause, .. } => cause.to_string(),
            Error::Corrupt { reason, .. } => reason.clone(),
            Error::Io { cause, .. } => cause.to_string(),
            other => other.to_string(),
        };
        Seen {
            path: path.to_string(),
            message: e.to_string(),
            errno: e.errno(),
            reason,
            filter: matches!(e, Error::Filter { .. }),
        }
    }
}

#[derive(Debug)]
struct Walk {
    /// When reading stops (each read is bounded; a file too long to read by then is a
    /// broken promise, and the thread ends rather than spin on).
    deadline: Instant,
    /// The array could not be opened.
    open_error: Option<Seen>,
    fragments: Vec<String>,
    /// Path -> hash of the bytes read, for files that read.
    read: BTreeMap<String, u64>,
    errors: Vec<Seen>,
    /// Broken promises that are not errors (sizes, JSON).
    violations: Vec<String>,
    peak: u64,
    cache_used: u64,
    reads: usize,
}

/// Reads a file in odd-sized steps, checking each answer against `size()`.
fn read_file(view: &ArrayTree, node: Ino, walk: &mut Walk, path: &str) -> Result<u64, Error> {
    let size = view.size(node)?;
    let mut hash = DefaultHasher::new();
    let mut pos = 0u64;
    let mut json = Vec::new();
    // Odd steps, so tile and chunk boundaries fall inside reads; JSON files are rendered
    // whole per read when larger than the cache, so they are read as the kernel would.
    let step = if path.ends_with(".json") {
        128 << 10
    } else {
        7919
    };
    while pos < size {
        if Instant::now() > walk.deadline {
            walk.violations.push(format!(
                "{path}: not read to its end ({size} bytes) within {WALK_LIMIT:?}, at {pos}"
            ));
            return Ok(0);
        }
        let part = view.read_at(node, pos, step)?;
        walk.reads += 1;
        let want = step.min(size - pos);
        if part.len() as u64 != want {
            walk.violations.push(format!(
                "{path}: read at {pos} gave {} bytes, size() promised {want} of {size}",
                part.len()
            ));
            return Ok(0);
        }
        if path.ends_with(".json") {
            json.extend_from_slice(&part);
        }
        hash.write(&part);
        pos += want;
    }
    if !view.read_at(node, size, 4096)?.is_empty() {
        walk.violations
            .push(format!("{path}: bytes served past size() = {size}"));
    }
    if path.ends_with(".json") {
        if let Err(e) = serde_json::from_slice::<Value>(&json) {
            walk.violations
                .push(format!("{path}: read without error but is not JSON: {e}"));
        }
    }
    Ok(hash.finish())
}

/// Opens `array` and reads every file of its tree (on the calling thread).
fn walk(array: &Path, options: OpenOptions) -> Walk {
    reset_peak();
    let mut w = Walk {
        deadline: Instant::now() + WALK_LIMIT,
        open_error: None,
        fragments: Vec::new(),
        read: BTreeMap::new(),
        errors: Vec::new(),
        violations: Vec::new(),
        peak: 0,
        cache_used: 0,
        reads: 0,
    };
    let view = match ArrayTree::open_path(array, options, VIEW_CACHE) {
        Ok(v) => v,
        Err(e) => {
            w.open_error = Some(Seen::of("", &e));
            w.peak = peak();
            return w;
        }
    };
    w.fragments = view
        .array()
        .fragments
        .iter()
        .map(|f| f.name.clone())
        .collect();
    let mut stack = vec![(String::new(), ROOT)];
    while let Some((path, dir)) = stack.pop() {
        let entries = match view.list(dir) {
            Ok(e) => e,
            Err(e) => {
                w.errors.push(Seen::of(&path, &e));
                continue;
            }
        };
        for e in entries {
            let child = if path.is_empty() {
                e.name.clone()
            } else {
                format!("{path}/{}", e.name)
            };
            if e.is_dir() {
                stack.push((child, e.ino));
                continue;
            }
            let r = read_file(&view, e.ino, &mut w, &child);
            match r {
                Ok(h) => {
                    w.read.insert(child, h);
                }
                Err(err) => w.errors.push(Seen::of(&child, &err)),
            }
        }
    }
    w.cache_used = view.cache_used();
    drop(view);
    w.peak = peak();
    w
}

/// [`walk`] on its own thread, within [`WALK_LIMIT`]; a panic or a hang is an `Err`.
fn walk_in_time(array: &Path, options: OpenOptions) -> Result<(Walk, Duration), String> {
    let (tx, rx) = mpsc::channel();
    let owned = array.to_path_buf();
    let start = Instant::now();
    let handle = std::thread::Builder::new()
        .name("walk".into())
        .spawn(move || {
            let _ = tx.send(walk(&owned, options));
        })
        .unwrap();
    match rx.recv_timeout(WALK_LIMIT + Duration::from_secs(5)) {
        Ok(w) => {
            let _ = handle.join();
            Ok((w, start.elapsed()))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "still reading after {WALK_LIMIT:?} (a hang); the thread is left behind"
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let panic = handle.join().err();
            let msg = panic
                .as_ref()
                .and_then(|p| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or(p.downcast_ref::<&str>().map(|s| s.to_string()))
                })
                .unwrap_or_default();
            Err(format!("panicked: {msg}"))
        }
    }
}

// ---------------------------------------------------------------------------------------
// The rules.

/// `tile N` (or `chunk N`) with a number.
fn names_numbered(message: &str, word: &str) -> bool {
    message.match_indices(&format!("{word} ")).any(|(i, m)| {
        message[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Whether `message` names file `name` (as a whole name: `a.tdb` is not named by
/// `__fragment_metadata.tdb`).
fn names_file(message: &str, name: &str) -> bool {
    message.match_indices(name).any(|(i, _)| {
        message[..i]
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, ' ' | '/' | ','))
    })
}

/// Everything known about the intact array that the rules need.
struct Intact {
    walk: Walk,
    fragments: Vec<FragmentInfo>,
}

/// Checks one error against the rule in the module doc.
fn check_error(e: &Seen, damage: &Damage, intact: &Intact) -> Result<(), String> {
    let fail = |why: &str| Err(format!("{}: {why}: {:?}", e.path, e.message));
    if e.errno != libc::EIO {
        return fail(&format!("errno {} instead of EIO", e.errno));
    }
    if e.reason.trim().is_empty() {
        return fail("no reason");
    }
    let shown_fragment = e
        .path
        .strip_prefix("fragments/")
        .map(|p| p.split('/').next().unwrap_or(p));
    let Some(shown) = shown_fragment else {
        // Outside fragments/: array.json, schema.json, schemas/. Only fragment
        // problems can reach there; they must still name the fragment.
        let names_one = intact.fragments.iter().any(|f| e.message.contains(&f.name));
        return match names_one {
            true => Ok(()),
            false => fail("names no fragment"),
        };
    };
    let Some(frag) = intact
        .fragments
        .iter()
        .find(|f| fragfs::view::names::encode(&f.name) == shown)
    else {
        return fail("error under a fragment the intact array does not have");
    };
    if !e.message.contains(&frag.name) {
        return fail("does not name the fragment");
    }
    if !frag.files.iter().any(|f| names_file(&e.message, f)) {
        return fail("names no file of the fragment");
    }
    let data_named = frag
        .data
        .iter()
        .filter_map(|d| d.rel.rsplit('/').next())
        .any(|name| names_file(&e.message, name));
    if data_named && !names_numbered(&e.message, "tile") {
        return fail("names a data file but no tile");
    }
    if e.filter && !names_numbered(&e.message, "chunk") {
        return fail("a chunk that cannot be un-filtered, but no chunk named");
    }
    if damage.data_file && damage.fragment.as_deref() == Some(frag.name.as_str()) {
        let file = damage.file.rsplit('/').next().unwrap();
        if !names_file(&e.message, file) {
            return fail(&format!("only {file} was damaged, but it is not named"));
        }
    }
    Ok(())
}

/// Format version in a fragment folder's name (`__t1_t2_uuid_v`; `__uuid_t` before v3
/// counts as 2).
fn fragment_version(file: &str) -> u32 {
    let dir = file.rsplit('/').nth(1).unwrap_or_default();
    fragfs::format::name::TimestampedName::parse(dir).map_or(0, |n| n.version)
}

/// All rules for one damaged copy; returns the broken ones.
fn check_copy(damage: &Damage, w: &Walk, intact: &Intact, checksummed: bool) -> Vec<String> {
    let mut out: Vec<String> = w.violations.clone();
    if w.cache_used > VIEW_CACHE {
        out.push(format!("cache holds {} bytes > {VIEW_CACHE}", w.cache_used));
    }
    if w.peak > VIEW_CACHE + MEMORY_SLACK {
        out.push(format!(
            "the reading thread held {} MiB at its peak (cache {} MiB + {} MiB allowed)",
            w.peak >> 20,
            VIEW_CACHE >> 20,
            MEMORY_SLACK >> 20
        ));
    }
    if let Some(e) = &w.open_error {
        let named = damage.file.rsplit('/').next().unwrap();
        if e.errno != libc::EIO && !e.message.contains("not a TileDB array") {
            out.push(format!("open: errno {}: {}", e.errno, e.message));
        }
        if !e.message.contains(named) || e.reason.trim().is_empty() {
            out.push(format!("open error does not name {named}: {}", e.message));
        }
        return out;
    }
    let mut expected_fragments: Vec<String> = intact.walk.fragments.clone();
    if damage.kind == Kind::MissingMetadata && fragment_version(&damage.file) <= 4 {
        // Formats 1-4 have no commit files: a folder holding __fragment_metadata.tdb is
        // what makes a fragment (TileDB's rule), so without it there is none.
        expected_fragments.retain(|f| Some(f) != damage.fragment.as_ref());
    }
    if w.fragments != expected_fragments {
        out.push(format!(
            "fragments listed changed: {:?} instead of {expected_fragments:?}",
            w.fragments
        ));
    }
    for e in &w.errors {
        if let Err(why) = check_error(e, damage, intact) {
            out.push(why);
        }
    }
    // Damage to one fragment's files fails only that fragment's files (array.json at
    // the root shows each fragment's error in place of its summary).
    if let Some(damaged) = damage.fragment.as_deref().map(fragfs::view::names::encode) {
        for e in &w.errors {
            let fragment = e
                .path
                .strip_prefix("fragments/")
                .map(|p| p.split('/').next().unwrap_or(p));
            if fragment.is_some_and(|f| f != damaged) {
                out.push(format!(
                    "{}: fails, but only fragment {damaged} was damaged: {}",
                    e.path, e.message
                ));
            }
        }
    }
    // The data files' bytes (the JSON files describe the tiles, damage included, and
    // array.json and the Zarr group's .zattrs name the copy's own path; fragments.svg
    // describes the fragments, their sizes on disk included).
    let data_read = w.read.iter().filter(|(path, _)| {
        let name = path.rsplit('/').next().unwrap_or(path);
        !path.ends_with(".json")
            && ![".zattrs", ".zarray", ".zgroup", "fragments.svg"].contains(&name)
    });
    if checksummed && damage.data_file {
        for (path, hash) in data_read.clone() {
            if intact.walk.read.get(path) != Some(hash) {
                out.push(format!(
                    "{path}: read without error but differs from the intact copy \
                     (every data file is checksummed)"
                ));
            }
        }
        if w.errors.is_empty() {
            out.push("a checksummed data file was damaged, yet everything read".into());
        }
    }
    if let (Kind::ChecksummedData, Some((k, c))) = (damage.kind, damage.chunk) {
        let file = damage.file.rsplit('/').next().unwrap();
        let tile = format!("tile {k}, chunk {c}");
        let hit = w.errors.iter().any(|e| {
            e.message.contains("checksum mismatch")
                && e.message.contains(file)
                && e.message.contains(&tile)
        });
        if !hit {
            out.push(format!(
                "no read failed with \"checksum mismatch\" naming {file}, {tile}"
            ));
        }
        for (path, hash) in data_read {
            if intact.walk.read.get(path) != Some(hash) {
                out.push(format!(
                    "{path}: read without error but differs from the intact copy \
                     (its tile is checksummed)"
                ));
            }
        }
    }
    out
}

/// A short class for the statistics: what the reason is about.
fn error_class(e: &Seen) -> &'static str {
    let m = &e.message;
    let classes = [
        ("checksum mismatch", "checksum mismatch"),
        ("truncated file", "truncated file"),
        ("cannot open", "missing file"),
        ("No such file", "missing file"),
        ("chunk claims", "chunk claims more bytes than exist"),
        ("chunk count", "chunk count"),
        ("chunks add up", "chunk sizes disagree with metadata"),
        ("tile offsets list", "tile count beyond the tiles listed"),
        ("out of order", "offsets out of order"),
        ("generic tile", "generic tile header"),
        ("footer", "footer"),
        ("AES_256_GCM", "decryption failed"),
        ("format version", "format version"),
    ];
    for (needle, class) in classes {
        if m.contains(needle) {
            return class;
        }
    }
    if e.filter {
        "filter could not reverse a chunk"
    } else {
        "other inconsistency"
    }
}

// ---------------------------------------------------------------------------------------
// The tests.

struct Stats {
    copies: BTreeMap<Kind, usize>,
    reads: usize,
    files_read: usize,
    errors: BTreeMap<&'static str, usize>,
    open_errors: usize,
    slowest: (Duration, String),
    peak: u64,
}

/// Makes a damaged copy of `source` in `tmp` and returns its array folder.
fn damaged_copy(tmp: &Path, source: &Source, damage: &Damage, n: usize) -> PathBuf {
    let array = tmp.join(format!("copy{n}"));
    copy_dir(&source.array, &array);
    damage.apply(&array);
    array
}

#[test]
fn damaged_copies_read_as_errors_that_name_the_place_never_as_panics_hangs_or_lies() {
    let started = Instant::now();
    let sources = sources();
    let (jobs, intacts) = all_jobs(&sources);
    let stats = Mutex::new(Stats {
        copies: BTreeMap::new(),
        reads: 0,
        files_read: 0,
        errors: BTreeMap::new(),
        open_errors: 0,
        slowest: (Duration::ZERO, String::new()),
        peak: 0,
    });
    let failures = Mutex::new(Vec::new());
    let queue = Mutex::new(jobs.iter().enumerate());
    let tmp = scratch_dir();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let Some((n, (s, damage))) = queue.lock().unwrap().next() else {
                    break;
                };
                let source = &sources[*s];
                let array = damaged_copy(tmp.path(), source, damage, n);
                let label = format!("{} [{}]", source.label, damage.what);
                let result = walk_in_time(&array, options(&source.expected));
                let _ = std::fs::remove_dir_all(&array);
                let (w, took) = match result {
                    Ok(r) => r,
                    Err(why) => {
                        failures.lock().unwrap().push(format!("{label}: {why}"));
                        continue;
                    }
                };
                let broken = check_copy(damage, &w, &intacts[*s], source.all_checksummed);
                let mut st = stats.lock().unwrap();
                *st.copies.entry(damage.kind).or_default() += 1;
                st.reads += w.reads;
                st.files_read += w.read.len() + w.errors.len();
                st.open_errors += w.open_error.is_some() as usize;
                for e in &w.errors {
                    *st.errors.entry(error_class(e)).or_default() += 1;
                }
                if took > st.slowest.0 {
                    st.slowest = (took, label.clone());
                }
                st.peak = st.peak.max(w.peak);
                drop(st);
                let mut f = failures.lock().unwrap();
                f.extend(broken.into_iter().map(|b| format!("{label}: {b}")));
            });
        }
    });
    let st = stats.into_inner().unwrap();
    let total: usize = st.copies.values().sum();
    println!(
        "{total} damaged copies of {} arrays in {:?}",
        sources.len(),
        started.elapsed()
    );
    for (kind, n) in &st.copies {
        println!("  {kind:?}: {n}");
    }
    println!(
        "{} reads of {} files; {} copies refused at open",
        st.reads, st.files_read, st.open_errors
    );
    for (class, n) in &st.errors {
        println!("  error {class}: {n}");
    }
    println!(
        "slowest copy {:?} ({}); peak held by a reading thread {} KiB",
        st.slowest.0,
        st.slowest.1,
        st.peak >> 10
    );
    let failures = failures.into_inner().unwrap();
    if let Ok(file) = std::env::var("CORRUPTION_FAILURES") {
        std::fs::write(file, failures.join("\n")).unwrap();
    }
    assert!(
        failures.is_empty(),
        "{} broken promises:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(total >= 300, "only {total} damaged copies");
}

// ---------------------------------------------------------------------------------------
// Through a mount: the `fragfs` binary as a daemon.

/// A `fragfs mount` daemon, unmounted on drop.
struct Daemon {
    mnt: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        common::mounting::force_unmount(&self.mnt);
    }
}

impl Daemon {
    /// The daemon's process id, found by its mount point on its command line.
    fn pid(&self) -> Option<u32> {
        let needle = self.mnt.to_string_lossy().into_owned();
        std::fs::read_dir("/proc").ok()?.find_map(|e| {
            let e = e.ok()?;
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            let is_daemon =
                args.contains(&b"mount".as_slice()) && args.contains(&needle.as_bytes());
            is_daemon.then_some(pid)
        })
    }

    /// Peak resident memory (VmHWM) of the daemon, in bytes.
    fn peak_rss(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib << 10)
    }

    fn error_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("ERROR"))
            .map(str::to_string)
            .collect()
    }
}

fn fragfs_cmd() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fragfs"));
    c.env_remove("RUST_LOG").env_remove("FRAGFS_ENCRYPTION_KEY");
    c
}

fn key_args(expected: &Value) -> Vec<String> {
    match expected["encryption"]["key"].as_str() {
        Some(k) => vec!["--encryption-key".into(), k.into()],
        None => Vec::new(),
    }
}

/// Mounts `array` as a daemon with an 8 MiB cache; `Err` is the one stderr line.
fn mount(array: &Path, expected: &Value) -> Result<Daemon, String> {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = dir.path().join("fragfs.log");
    let out = fragfs_cmd()
        .arg("mount")
        .arg(array)
        .arg(&mnt)
        .args(["--cache-size", MOUNT_CACHE, "--log-file"])
        .arg(&log)
        .args(key_args(expected))
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(Daemon {
        mnt,
        log,
        _dir: dir,
    })
}

/// What reading every file through the mount gave: path -> hash of the bytes, or errno.
type MountRead = BTreeMap<String, Result<u64, i32>>;

/// Reads every file below `root` with plain file I/O; folders that cannot be listed are
/// entries too.
fn read_mounted(root: &Path) -> MountRead {
    let mut out = BTreeMap::new();
    let mut stack = vec![String::new()];
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(-1);
    while let Some(rel) = stack.pop() {
        let entries = match std::fs::read_dir(root.join(&rel)) {
            Ok(entries) => entries.collect::<Result<Vec<_>, _>>(),
            Err(e) => Err(e),
        };
        let entries = match entries {
            Ok(e) => e,
            Err(e) => {
                out.insert(rel, Err(errno(e)));
                continue;
            }
        };
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(child);
                continue;
            }
            out.insert(child.clone(), cat(&root.join(&child)).map_err(errno));
        }
    }
    out
}

/// Reads a file as `cat` does, 128 KiB at a time (not reserving what `stat` says:
/// sizes come from metadata, which may claim a terabyte that the reads then refuse),
/// and hashes its bytes.
fn cat(path: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 128 << 10];
    let mut h = DefaultHasher::new();
    loop {
        match file.read(&mut buf)? {
            0 => return Ok(h.finish()),
            n => h.write(&buf[..n]),
        }
    }
}

/// [`read_mounted`] on its own thread, within [`WALK_LIMIT`].
fn read_mounted_in_time(root: &Path) -> Result<MountRead, String> {
    let (tx, rx) = mpsc::channel();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(read_mounted(&root));
    });
    rx.recv_timeout(WALK_LIMIT)
        .map_err(|_| format!("reading the mount did not finish within {WALK_LIMIT:?}"))
}

/// Whether the mount test mounts damaged copies of the array `label`: every
/// TileDB-written fixture and a legacy (format 1) one.
fn mounted(label: &str) -> bool {
    label.starts_with("tiledb/") || label == "handbuilt/v1_sparse_split_gzip"
}

/// The damaged copies mounted: the first of each kind of every [`mounted`] array, the
/// first claiming a 4 GiB chunk or a 1 TiB tile, and a flipped bit in tile 0 of every
/// checksummed file.
fn mount_subset(jobs: &[(usize, Damage)], sources: &[Source]) -> Vec<usize> {
    let mut seen = BTreeSet::new();
    let mut chosen = Vec::new();
    for (n, (s, d)) in jobs.iter().enumerate() {
        let label = sources[*s].label.as_str();
        if !mounted(label) {
            continue;
        }
        let key = match d.kind {
            Kind::ChecksummedData if d.chunk.is_some_and(|(k, _)| k == 0) => {
                (label, d.kind, d.file.clone())
            }
            // The headers claiming a 4 GiB chunk or a 1 TiB tile, for the memory bound.
            kind if d.what.contains(" GiB") || d.what.contains(" TiB") => {
                (label, kind, "huge".to_string())
            }
            kind => (label, kind, String::new()),
        };
        if seen.insert(key) {
            chosen.push(n);
        }
    }
    chosen
}

/// All jobs of the view suite, with the intact walks the rules compare against.
fn all_jobs(sources: &[Source]) -> (Vec<(usize, Damage)>, Vec<Intact>) {
    let mut jobs = Vec::new();
    let mut intacts = Vec::new();
    for (s, source) in sources.iter().enumerate() {
        let options = options(&source.expected);
        let view = ArrayTree::open_path(&source.array, options.clone(), VIEW_CACHE)
            .unwrap_or_else(|e| panic!("{}: {e}", source.label));
        let (damages, fragments) = plan(source, &view);
        let (walk, _) = walk_in_time(&source.array, options)
            .unwrap_or_else(|e| panic!("{}: intact: {e}", source.label));
        assert!(
            walk.errors.is_empty() && walk.violations.is_empty(),
            "{}: the intact array does not read cleanly: {:?} {:?}",
            source.label,
            walk.errors,
            walk.violations
        );
        intacts.push(Intact { walk, fragments });
        jobs.extend(damages.into_iter().map(|d| (s, d)));
    }
    (jobs, intacts)
}

/// Checks one damaged copy through a mount against what the view read of it.
fn check_mounted(source: &Source, damage: &Damage, array: &Path, intact: &Intact) -> Vec<String> {
    let mut out = Vec::new();
    let (view, _) = match walk_in_time(array, options(&source.expected)) {
        Ok(w) => w,
        Err(e) => return vec![format!("view: {e}")],
    };
    let d = match mount(array, &source.expected) {
        Ok(d) => d,
        Err(stderr) => {
            // Only an array that cannot be opened may refuse to mount: one line, naming
            // the damaged file.
            let file = damage.file.rsplit('/').next().unwrap();
            if view.open_error.is_none() {
                out.push(format!("mount failed but the view opens: {stderr}"));
            } else if stderr.lines().count() != 1 || !stderr.contains(file) {
                out.push(format!(
                    "mount failure is not one line naming {file}: {stderr}"
                ));
            }
            return out;
        }
    };
    if view.open_error.is_some() {
        out.push("mounted, but the view cannot open the array".into());
        return out;
    }
    // The view's reading of this copy keeps every rule, and the mount agrees with it.
    out.extend(check_copy(damage, &view, intact, source.all_checksummed));
    let pid = d.pid();
    let read = match read_mounted_in_time(&d.mnt) {
        Ok(r) => r,
        Err(e) => {
            out.push(e);
            return out;
        }
    };
    // Every failure is EIO, where the view fails too; every other file is what the
    // view serves.
    let view_failed: BTreeSet<&str> = view.errors.iter().map(|e| e.path.as_str()).collect();
    let mut eio = 0;
    for (path, r) in &read {
        match r {
            Err(errno) if *errno != libc::EIO => {
                out.push(format!("{path}: errno {errno} instead of EIO"))
            }
            Err(_) => {
                eio += 1;
                if !view_failed.contains(path.as_str()) {
                    out.push(format!(
                        "{path}: EIO through the mount, reads through the view"
                    ));
                }
            }
            Ok(hash) if view.read.get(path) != Some(hash) => out.push(format!(
                "{path}: through the mount differs from the view ({})",
                if view_failed.contains(path.as_str()) {
                    "which fails"
                } else {
                    "bytes"
                }
            )),
            Ok(_) => {}
        }
    }
    for path in view_failed
        .iter()
        .copied()
        .chain(view.read.keys().map(String::as_str))
    {
        if !read.contains_key(path) {
            out.push(format!(
                "{path}: in the view's tree, not shown through the mount"
            ));
        }
    }
    // The daemon is alive and still serves a good file.
    let good = view
        .read
        .keys()
        .find(|p| p.starts_with("fragments/") && !p.ends_with(".json"))
        .or(view.read.keys().next());
    if !common::mounting::is_mounted(&d.mnt) || pid.is_none() {
        out.push("the daemon is gone after the reads".into());
    } else if let Some(good) = good {
        if std::fs::read(d.mnt.join(good)).is_err() {
            out.push(format!("{good} no longer reads after the errors"));
        }
    }
    // One ERROR line per failed read, each naming what the view's error names.
    let lines = d.error_lines();
    if lines.len() != eio {
        out.push(format!(
            "{eio} EIO but {} ERROR lines in the log:\n{}",
            lines.len(),
            lines.join("\n")
        ));
    }
    if let (Kind::ChecksummedData, Some((k, c))) = (damage.kind, damage.chunk) {
        let file = damage.file.rsplit('/').next().unwrap();
        let place = format!("{file}, tile {k}, chunk {c}");
        if !lines
            .iter()
            .any(|l| l.contains("checksum mismatch") && l.contains(&place))
        {
            out.push(format!("no \"checksum mismatch\" naming {place} logged"));
        }
    }
    for line in &lines {
        let seen = Seen {
            path: view
                .errors
                .iter()
                .find(|e| line.contains(&e.message))
                .map(|e| e.path.clone())
                .unwrap_or_default(),
            message: line.clone(),
            errno: libc::EIO,
            reason: "logged".into(),
            filter: line.contains(", chunk "),
        };
        if seen.path.is_empty() {
            out.push(format!("logged error is none the view reports: {line}"));
        } else if let Err(why) = check_error(&seen, damage, intact) {
            out.push(format!("log: {why}"));
        }
    }
    if let Some(rss) = d.peak_rss() {
        if rss > MOUNT_RSS_LIMIT {
            out.push(format!(
                "the daemon's peak resident memory is {} MiB (cache {MOUNT_CACHE} + 64 MiB allowed)",
                rss >> 20
            ));
        }
    } else {
        out.push("no VmHWM for the daemon".into());
    }
    // `fragfs cat` of the first failing file: non-zero exit, the view's error, one line.
    let is_file = |p: &str| {
        [".bin", ".json", ".txt", ".csv", ".npy"]
            .iter()
            .any(|x| p.ends_with(x))
    };
    if let Some(e) = view.errors.iter().find(|e| is_file(&e.path)) {
        {
            let cat = fragfs_cmd()
                .arg("cat")
                .arg(array)
                .arg(&e.path)
                .args(key_args(&source.expected))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&cat.stderr);
            if cat.status.success() || stderr.lines().count() != 1 || !stderr.contains(&e.message) {
                out.push(format!(
                    "fragfs cat {}: exit {}, stderr {stderr:?}, expected {:?}",
                    e.path, cat.status, e.message
                ));
            }
        }
    }
    out
}

#[test]
fn damaged_copies_through_a_mount_are_eio_logged_once_and_the_daemon_serves_on() {
    if !common::mounting::fuse_available("corruption through a mount") {
        return;
    }
    let started = Instant::now();
    // Only the arrays mounted: each costs an intact walk to plan and judge its copies.
    let sources: Vec<Source> = sources()
        .into_iter()
        .filter(|s| mounted(&s.label))
        .collect();
    let (jobs, intacts) = all_jobs(&sources);
    let subset = mount_subset(&jobs, &sources);
    let tmp = scratch_dir();
    let mut failures = Vec::new();
    let mut kinds = BTreeMap::new();
    for &n in &subset {
        let (s, damage) = &jobs[n];
        let source = &sources[*s];
        let array = damaged_copy(tmp.path(), source, damage, n);
        *kinds.entry(damage.kind).or_insert(0) += 1;
        let label = format!("{} [{}]", source.label, damage.what);
        for broken in check_mounted(source, damage, &array, &intacts[*s]) {
            failures.push(format!("{label}: {broken}"));
        }
    }
    println!(
        "{} damaged copies mounted in {:?}: {kinds:?}",
        subset.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} broken promises through the mount:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
