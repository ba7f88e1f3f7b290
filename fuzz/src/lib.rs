//! The bodies of the fuzz targets, one function per target.
//!
//! The regression tests (`tests/fuzz_regressions.rs`) include this file too, so an input
//! saved from a crash replays exactly what the fuzzer ran. Each function takes arbitrary
//! bytes and must return: any panic, hang or oversized allocation inside fragfs is a bug.
//! The input layouts are small headers in front of real bytes, so files of real arrays
//! (cut up by `seeds.rs`) make good seeds.
//!
//! The network doors' parsers (`fragfs::wire`) have targets of their own: `request_path`,
//! `range_header`, `propfind_body`, `basic_auth` and `rpc_record` (a client's TCP byte
//! stream answered by a real NFS door over a fixture array). Beside "no panic" they check
//! what each parser promises (a path segment never leaves the tree, a range never passes
//! the file's end, a PROPFIND never asks more than its bounds), so a bounds check gone
//! wrong is found even where it does not crash.

use fragfs::array::dense_grid::DenseGrid;
use fragfs::array::field::fragment_fields;
use fragfs::array::generic_tile::{decode_generic_tile, read_generic_tile};
use fragfs::error::Place;
use fragfs::filter::{unfilter_chunk, unfilter_chunk_into, unfilter_string_chunk, ChunkContext};
use fragfs::format::chunked::parse_chunks;
use fragfs::format::footer::{footer_location, Footer};
use fragfs::format::fragment_metadata::{
    parse_fragment_stats, parse_processed_conditions, parse_sums, parse_u64_list, RTree, TileBounds,
};
use fragfs::format::generic_tile::{is_pre_version_1_file, GenericTileHeader};
use fragfs::format::legacy_metadata::LegacyMetadata;
use fragfs::format::pipeline::WebpOptions;
use fragfs::format::schema::ArraySchema;
use fragfs::format::{Datatype, Filter, FilterPipeline, Reader};
use fragfs::storage::MemoryStore;

// Not in the regression tests, which include this file and have an allocator of their own.
#[cfg(not(test))]
mod malloc_limit;
pub mod seeds;

/// The key of the `encrypted` fixture, so its tiles decrypt and the fuzzer gets past
/// AES-GCM on seeds taken from it.
pub const KEY: [u8; 32] = *b"0123456789abcdeF0123456789abcdeF";

/// Most generic tiles a `generic_tile` input is walked for (a metadata file is a few
/// dozen tiles back to back).
const MAX_TILES: usize = 64;

/// `generic_tile`: a whole file of back-to-back generic tiles (a schema, a fragment's
/// `__fragment_metadata.tdb`, a `.meta` or `.del` file). Each tile is parsed and decoded
/// in memory, and read from a store as the array code does.
pub fn generic_tile(data: &[u8]) {
    let _ = is_pre_version_1_file(data);
    let store = MemoryStore::new("fuzz");
    store.put("f", data.to_vec());
    let place = Place::file("fuzz");
    let mut offset = 0usize;
    for _ in 0..MAX_TILES {
        let rest = &data[offset..];
        let header = GenericTileHeader::parse(rest);
        let _ = decode_generic_tile(rest, Some(KEY), &place);
        let _ = decode_generic_tile(rest, None, &place);
        let len = data.len() as u64;
        let _ = read_generic_tile(&store, "f", len, offset as u64, Some(KEY), &place);
        let Ok(header) = header else { return };
        match usize::try_from(header.end()) {
            Ok(len) if len < rest.len() => offset += len,
            _ => return,
        }
    }
}

/// `schema`: an unfiltered schema payload, and what is derived from a schema alone.
pub fn schema(data: &[u8]) {
    let Ok(schema) = ArraySchema::parse(data) else {
        return;
    };
    for version in [1, 4, 5, 9, 10, 23] {
        let _ = footer_location(version, &schema);
    }
    let _ = schema.all_dims_fixed();
    for d in &schema.dimensions {
        let _ = schema.dimension_filters(d).input_types(d.datatype);
    }
    for a in &schema.attributes {
        let _ = a.filters.input_types(a.datatype);
    }
    for footer in [
        Footer::default(),
        Footer {
            version: 4,
            has_timestamps: true,
            has_delete_meta: true,
            ..Footer::default()
        },
    ] {
        for f in fragment_fields(&schema, &footer) {
            let _ = (f.cell_size(), f.file_cell_size(), f.data_file());
        }
    }
}

/// `fragment_metadata`: `[name version: u8][schema length: u16 LE][schema payload][rest]`.
/// Once the schema parses, `rest` goes through every fragment-metadata parser: the
/// footer (v3-23), the whole-file metadata of v1-2, and the payloads of the metadata's
/// generic tiles (R-tree, u64 lists, tile bounds, sums, fragment statistics, processed
/// conditions).
pub fn fragment_metadata(data: &[u8]) {
    let [version, a, b, rest @ ..] = data else {
        return;
    };
    let version = u32::from(*version);
    let (schema, rest) = rest.split_at(usize::from(u16::from_le_bytes([*a, *b])).min(rest.len()));
    let Ok(schema) = ArraySchema::parse(schema) else {
        return;
    };
    let _ = footer_location(version, &schema);
    if let Ok(footer) = Footer::parse(rest, &schema) {
        footer_consumers(&schema, &footer);
        let _ = parse_fragment_stats(rest, footer.slot_count(&schema));
    }
    if let Ok(legacy) = LegacyMetadata::parse(rest, &schema) {
        for dense in [false, true] {
            footer_consumers(&schema, &legacy.footer(dense));
        }
    }
    let _ = RTree::parse(rest, version, &schema.dimensions).map(|t| t.leaves().len());
    if let Ok(bounds) = TileBounds::parse(rest) {
        let fields = fragment_fields(&schema, &Footer::default());
        let tiles = bounds.fixed.len();
        for f in &fields {
            for i in [0, 1, tiles.saturating_sub(1), tiles] {
                let _ = bounds.get(i, f.is_var(), f.cell_size() as usize, tiles);
            }
        }
    }
    let _ = parse_u64_list(rest, "fuzz");
    let _ = parse_sums(rest);
    let _ = parse_processed_conditions(rest);
}

/// What the array code computes from a footer and its schema without reading more.
fn footer_consumers(schema: &ArraySchema, footer: &Footer) {
    for f in fragment_fields(schema, footer) {
        let _ = (f.cell_size(), f.file_cell_size());
    }
    if let Ok(grid) = DenseGrid::new(schema, footer) {
        let cells = grid.tile_count().saturating_mul(grid.cells_per_tile());
        for n in [0, 1, cells.saturating_sub(1), cells] {
            for dim in 0..schema.dimensions.len() {
                let _ = grid.coordinate(n, dim);
            }
        }
    }
}

/// `filters`: one filter's reverse through a one-filter pipeline:
/// `[filter id][datatype][cell size][format version][flags][unfiltered length: u32 LE]`
/// `[metadata length: u16 LE][8 option bytes][metadata][data]`. The filter id is
/// TileDB's; flags bit 0 gives the key. RLE and DICTIONARY also run in string mode.
pub fn filters(data: &[u8]) {
    let mut r = Reader::new(data);
    let Ok(head) = r.array::<19>("fuzz header") else {
        return;
    };
    let [id, datatype, cell_size, version, flags, l0, l1, l2, l3, m0, m1, options @ ..] = head;
    let Some(filter) = filter_from(id, &options) else {
        return;
    };
    let pipeline = FilterPipeline {
        max_chunk_size: 65536,
        filters: vec![filter],
    };
    let ctx = ChunkContext {
        field_type: Datatype::from_u8(datatype).unwrap_or(Datatype::UInt8),
        cell_size: u64::from(cell_size),
        format_version: u32::from(version),
        key: (flags & 1 == 1).then_some(KEY),
    };
    let unfiltered_len = u32::from_le_bytes([l0, l1, l2, l3]);
    let md_len = u16::from_le_bytes([m0, m1]);
    let rest = r.rest();
    let (md, chunk) = rest.split_at(usize::from(md_len).min(rest.len()));
    unfilter(&pipeline, &ctx, md, chunk, unfiltered_len);
}

/// The filter with TileDB id `id`, its options taken from `o`.
fn filter_from(id: u8, o: &[u8; 8]) -> Option<Filter> {
    let u16_at = |i: usize| u16::from_le_bytes([o[i], o[i + 1]]);
    let window = u32::from_le_bytes([o[0], o[1], o[2], o[3]]);
    let reinterpret = Datatype::from_u8(o[0]).filter(|t| *t != Datatype::Any);
    Some(match id {
        0 => Filter::None,
        1 => Filter::Gzip { level: 0 },
        2 => Filter::Zstd { level: 0 },
        3 => Filter::Lz4 { level: 0 },
        4 => Filter::Rle { level: 0 },
        5 => Filter::Bzip2 { level: 0 },
        6 => Filter::DoubleDelta { reinterpret },
        7 => Filter::BitWidthReduction { max_window: window },
        8 => Filter::BitShuffle,
        9 => Filter::ByteShuffle,
        10 => Filter::PositiveDelta { max_window: window },
        11 => Filter::Encryption,
        12 => Filter::ChecksumMd5,
        13 => Filter::ChecksumSha256,
        14 => Filter::Dictionary { level: 0 },
        15 => Filter::ScaleFloat {
            scale: f64::from(f32::from_le_bytes([o[0], o[1], o[2], o[3]])),
            offset: f64::from(i16::from_le_bytes([o[4], o[5]])),
            byte_width: u64::from(o[6]),
        },
        16 => Filter::Xor,
        18 => Filter::Webp(WebpOptions {
            quality: f32::from(o[0]),
            input_format: o[1],
            lossless: o[2] & 1 == 1,
            y_extent: u16_at(3),
            x_extent: u16_at(5),
        }),
        19 => Filter::Delta { reinterpret },
        _ => return None,
    })
}

/// `chunk_pipeline`: a whole data tile through a chained pipeline:
/// `[datatype][format version][cell size: u16 LE][flags][pipeline as in a schema][tile]`.
/// The tile is cut into chunks by `parse_chunks` and every chunk un-filtered; pipelines
/// starting with RLE or DICTIONARY also run in string mode. Flags bit 0 gives the key.
pub fn chunk_pipeline(data: &[u8]) {
    let mut r = Reader::new(data);
    let Ok([datatype, version, c0, c1, flags]) = r.array::<5>("fuzz header") else {
        return;
    };
    let Ok(pipeline) = FilterPipeline::parse(&mut r) else {
        return;
    };
    let ctx = ChunkContext {
        field_type: Datatype::from_u8(datatype).unwrap_or(Datatype::UInt8),
        cell_size: u64::from(u16::from_le_bytes([c0, c1])),
        format_version: u32::from(version),
        key: (flags & 1 == 1).then_some(KEY),
    };
    let tile = r.rest();
    let Ok(chunks) = parse_chunks(tile) else {
        return;
    };
    for chunk in chunks {
        let range = |r: std::ops::Range<u64>| tile.get(r.start as usize..r.end as usize);
        let (Some(md), Some(bytes)) = (range(chunk.metadata_range()), range(chunk.data_range()))
        else {
            panic!("parse_chunks returned a chunk outside the tile: {chunk:?}");
        };
        unfilter(&pipeline, &ctx, md, bytes, chunk.unfiltered_len);
    }
}

/// Un-filters one chunk, and in string mode too where the pipeline allows it.
fn unfilter(pipeline: &FilterPipeline, ctx: &ChunkContext, md: &[u8], data: &[u8], len: u32) {
    let alone = unfilter_chunk(pipeline, ctx, md, data, len);
    if let Ok(out) = &alone {
        assert_eq!(
            out.len(),
            len as usize,
            "unfilter_chunk returned the wrong size"
        );
    }
    // The serving path appends to a reply holding earlier chunks: the same bytes after
    // them, or on an error the reply as it was.
    let mut reply = b"earlier".to_vec();
    match (
        unfilter_chunk_into(pipeline, ctx, md, data, len, &mut reply),
        &alone,
    ) {
        (Ok(()), Ok(out)) => assert!(reply[..7] == *b"earlier" && reply[7..] == out[..]),
        (Err(_), Err(_)) => assert_eq!(reply, b"earlier", "an error left bytes behind"),
        (a, b) => panic!(
            "unfilter_chunk_into {a:?} but unfilter_chunk {:?}",
            b.as_ref().map(|v| v.len())
        ),
    }
    if matches!(
        pipeline.filters.first(),
        Some(Filter::Rle { .. } | Filter::Dictionary { .. })
    ) {
        let _ = unfilter_string_chunk(pipeline, ctx, md, data, len);
    }
}

/// Most rows of a fixed layout walked one by one (a ConstVector can claim 2³¹ rows).
const MAX_FILO_ROWS: u64 = 4096;

/// `filo`: a Filo chunk behind one byte that picks the column type (low bits) and the
/// writer version (top bit). The chunk is decoded whole, row by row through its fixed
/// layout, and also read as a fragment manifest.
pub fn filo(data: &[u8]) {
    use fragfs::filo::{
        decode_vector_with, fixed_layout_with, parse_manifest, ColumnType, DecodeOptions,
        FormatVersion,
    };
    let Some((&pick, chunk)) = data.split_first() else {
        return;
    };
    let column_type = ColumnType::ALL[usize::from(pick & 0x7f) % ColumnType::ALL.len()];
    let options = DecodeOptions {
        version: if pick & 0x80 == 0 {
            FormatVersion::Filo03
        } else {
            FormatVersion::Filo030
        },
        // Inside the fuzzers' 512 MiB allocation limit, as the budget must keep it.
        max_decoded_bytes: 64 << 20,
    };
    let _ = decode_vector_with(chunk, column_type, &options);
    if let Ok(Some(layout)) = fixed_layout_with(chunk, column_type, &options) {
        for row in 0..layout.rows().min(MAX_FILO_ROWS) {
            let _ = (
                layout.is_valid(row),
                layout.row_bytes(row),
                layout.timezone(row),
            );
        }
        let mut window = [0u8; 61];
        let _ = layout.read_values_at(layout.values_len() / 2, &mut window);
    }
    let _ = parse_manifest(chunk);
}

// ---- The network doors' parsers (`fragfs::wire`) ------------------------------------

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use fragfs::serve::nfs::{NfsDoor, RTMAX, WTMAX};
use fragfs::view::{ArrayTree, FileTree, ROOT};
use fragfs::wire;

/// `request_path`: a request's URL path (lossily UTF-8, as a header is) through
/// `wire::path`. A segment `segments` gives is a name of the tree: never empty, `.` or
/// `..`, never holding `/`, `\` or NUL; the path spelled canonically (each name
/// `encode`d) gives the same segments, so two spellings never differ. `decode` takes
/// only well-formed escapes (`%` and two hex digits) and undoes `encode`.
pub fn request_path(data: &[u8]) {
    use wire::path::{decode, encode, segments};
    let raw = String::from_utf8_lossy(data);
    if let Ok((names, trailing)) = segments(&raw) {
        for name in &names {
            assert!(
                !name.is_empty() && name != "." && name != "..",
                "segments({raw:?}) gave the name {name:?}"
            );
            assert!(
                !name.contains(['/', '\\', '\0']),
                "segments({raw:?}) gave {name:?}, which holds a separator or NUL"
            );
        }
        let mut canonical: String = names.iter().map(|n| format!("/{}", encode(n))).collect();
        if names.is_empty() || trailing {
            canonical.push('/');
        }
        assert_eq!(
            segments(&canonical),
            Ok((names, trailing)),
            "{raw:?} spelled canonically as {canonical:?}"
        );
    }
    if decode(&raw).is_ok() {
        assert!(
            escapes_well_formed(raw.as_bytes()),
            "decode took the malformed escapes of {raw:?}"
        );
    }
    let encoded = encode(&raw);
    assert!(
        encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)),
        "encode({raw:?}) = {encoded:?} keeps a reserved character"
    );
    assert_eq!(
        decode(&encoded).as_deref(),
        Ok(&*raw),
        "decode(encode(x)) != x"
    );
    if !raw.is_empty() && raw != "." && raw != ".." && !raw.contains(['/', '\\', '\0']) {
        assert_eq!(
            segments(&format!("/{encoded}")),
            Ok((vec![raw.to_string()], false)),
            "an encoded name is not one segment"
        );
    }
}

/// Whether every `%` of `s` starts an escape of RFC 3986 (`%` and two hex digits).
fn escapes_well_formed(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            match s.get(i + 1..i + 3) {
                Some([a, b]) if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => i += 3,
                _ => return false,
            }
        } else {
            i += 1;
        }
    }
    true
}

/// `range_header`: `[file size: u64 LE][Range header value]` through
/// `wire::range::answer`. A part it answers is never empty and never passes the end:
/// `start < end <= size`.
pub fn range_header(data: &[u8]) {
    use wire::range::{answer, Answer};
    let Some((size, header)) = data.split_first_chunk::<8>() else {
        return;
    };
    let size = u64::from_le_bytes(*size);
    let header = String::from_utf8_lossy(header);
    if let Answer::Part { start, end } = answer(&header, size) {
        assert!(
            start < end && end <= size,
            "Range {header:?} of {size} bytes answered [{start}, {end})"
        );
    }
}

/// `propfind_body`: a `PROPFIND` body through `wire::propfind::parse`. What it takes
/// is within its bounds: at most `MAX_PROPERTIES` properties, each once, with a
/// non-empty name, name and namespace at most `MAX_NAME` bytes; a body over `MAX_BODY`
/// is refused.
pub fn propfind_body(data: &[u8]) {
    use wire::propfind::{parse, Refused, Wanted, MAX_BODY, MAX_NAME, MAX_PROPERTIES};
    let parsed = parse(data);
    if data.len() > MAX_BODY {
        assert!(
            matches!(parsed, Err(Refused::TooMuch(_))),
            "a body of {} bytes was taken",
            data.len()
        );
    }
    if let Ok(Wanted::Props(props)) = parsed {
        assert!(props.len() <= MAX_PROPERTIES, "{} properties", props.len());
        for (i, (ns, name)) in props.iter().enumerate() {
            assert!(
                !name.is_empty() && name.len() <= MAX_NAME && ns.len() <= MAX_NAME,
                "a property {ns:?} {name:?}"
            );
            assert!(!props[..i].contains(&props[i]), "{ns:?} {name:?} twice");
        }
    }
}

/// `basic_auth`: an `Authorization` header value through `wire::auth::credentials`,
/// and the bytes as base64 text through `base64_decode`. A bearer token taken is
/// visible characters; a basic user holds no `:`; what decodes re-encodes to text that
/// decodes to it again. And the input as data: encoded by the reference encoder below
/// (padded and not) it decodes back to itself, and as basic credentials it gives the
/// user before its first `:` and the password after.
pub fn basic_auth(data: &[u8]) {
    use wire::auth::{base64_decode, credentials, Credentials};
    match credentials(data) {
        Some(Credentials::Bearer(token)) => assert!(
            !token.is_empty() && token.iter().all(u8::is_ascii_graphic),
            "bearer token {token:?}"
        ),
        Some(Credentials::Basic { user, .. }) => {
            assert!(!user.contains(&b':'), "a user {user:?} holding ':'")
        }
        None => {}
    }
    if let Some(decoded) = base64_decode(data) {
        assert!(
            decoded.len() <= data.len() / 4 * 3 + 2,
            "longer than its text"
        );
        let again = base64_encode(&decoded);
        assert_eq!(base64_decode(again.as_bytes()).as_ref(), Some(&decoded));
    }
    let text = base64_encode(data);
    assert_eq!(
        base64_decode(text.as_bytes()).as_deref(),
        Some(data),
        "{text}"
    );
    let unpadded = text.trim_end_matches('=');
    assert_eq!(
        base64_decode(unpadded.as_bytes()).as_deref(),
        Some(data),
        "{unpadded}"
    );
    if let Some(colon) = data.iter().position(|&b| b == b':') {
        assert_eq!(
            credentials(format!("Basic {text}").as_bytes()),
            Some(Credentials::Basic {
                user: data[..colon].to_vec(),
                password: data[colon + 1..].to_vec(),
            }),
            "Basic {text}"
        );
    }
}

/// Standard padded base64 (RFC 4648 §4), written from the RFC apart from fragfs's
/// decoder, as the reference it is checked against.
pub fn base64_encode(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for group in data.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The longest call record a connection takes: `serve::nfs::connection::MAX_RECORD`,
/// which is built with the `serve` feature only (the regression tests, built with it,
/// check the two agree).
pub const MAX_RECORD: usize = WTMAX as usize + 4096;

/// Records answered per `rpc_record` input: a client's burst, and a bound on the time
/// one input takes.
pub const MAX_CALLS: usize = 16;

/// The largest reply a call may get: a READ of `RTMAX` bytes or a READDIR page of as
/// much, with their headers and attributes.
pub const MAX_REPLY: usize = RTMAX as usize + 1024;

/// Placeholders for file handles in `rpc_record` inputs. A handle carries the door's
/// instance id, random per process, so no saved input can hold a real one: each run
/// of 16 of these bytes is replaced by the handle of the root ([`ROOT_PLACEHOLDER`]),
/// of [`FILE_PATH`] and of [`DIR_PATH`] before the stream is answered, so mutated seeds
/// get past the handle check to LOOKUP, GETATTR, READ and READDIR(PLUS).
pub const ROOT_PLACEHOLDER: [u8; 16] = [0xEE; 16];
pub const FILE_PLACEHOLDER: [u8; 16] = [0xDD; 16];
pub const DIR_PLACEHOLDER: [u8; 16] = [0xDC; 16];

/// The array the NFS door of `rpc_record` serves (small: every read is cheap).
pub const NFS_FIXTURE: &str = "tiledb/dense_basic";
/// The file [`FILE_PLACEHOLDER`] and the folder [`DIR_PLACEHOLDER`] stand for.
pub const FILE_PATH: &str = "latest/i32/values.bin";
pub const DIR_PATH: &str = "latest";

/// The repository's `tests/fixtures`: `CARGO_MANIFEST_DIR` is `fuzz/` in the fuzz crate
/// and the repository in the regression tests, which include this file.
pub fn fixtures() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let beside = here.join("../tests/fixtures");
    if beside.is_dir() {
        beside
    } else {
        here.join("tests/fixtures")
    }
}

/// An NFS door over [`NFS_FIXTURE`], opened once per process (as `fragfs serve` opens
/// its tree once): a fuzzer's inputs meet the state earlier ones left (held handles,
/// kept listings), as a server's clients do.
pub struct Nfs {
    pub tree: Arc<dyn FileTree>,
    pub door: NfsDoor,
}

pub fn nfs() -> &'static Nfs {
    static NFS: OnceLock<Nfs> = OnceLock::new();
    NFS.get_or_init(|| {
        let path = fixtures().join(NFS_FIXTURE);
        let tree: Arc<dyn FileTree> = Arc::new(
            ArrayTree::open_path(&path, Default::default(), 16 << 20)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        );
        let door = NfsDoor::new(tree.clone(), 2049, fragfs::serve::nfs::handles::HELD);
        Nfs { tree, door }
    })
}

impl Nfs {
    /// The handle of the node at `path`, held by the door from now on.
    pub fn handle(&self, path: &str) -> Option<[u8; 16]> {
        let ino = self.tree.resolve(path).ok()?;
        self.door.handles().handle(ino)
    }

    /// `stream` with each placeholder replaced by a real handle (taken afresh, so an
    /// earlier input cannot have made it stale).
    pub fn with_handles(&self, stream: &[u8]) -> Vec<u8> {
        let mut out = stream.to_vec();
        let mut real: [Option<[u8; 16]>; 3] = [None; 3];
        let mut i = 0;
        while i + 16 <= out.len() {
            let which = [ROOT_PLACEHOLDER, FILE_PLACEHOLDER, DIR_PLACEHOLDER]
                .iter()
                .position(|p| out[i..i + 16] == *p);
            let Some(which) = which else {
                i += 1;
                continue;
            };
            let handle = real[which].get_or_insert_with(|| {
                let handle = match which {
                    0 => self.door.handles().handle(ROOT),
                    1 => self.handle(FILE_PATH),
                    _ => self.handle(DIR_PATH),
                };
                handle.unwrap_or_else(|| panic!("no handle for placeholder {which}"))
            });
            out[i..i + 16].copy_from_slice(handle);
            i += 16;
        }
        out
    }
}

/// `rpc_record`: the bytes an NFS client sends on its TCP connection (record marks and
/// call records, handles as placeholders), cut into records by `wire::rpc::split` under
/// the connection's bound, and the first [`MAX_CALLS`] answered by a real NFS door
/// (NFS, MOUNT and portmapper). A reply answers its call's xid, and is at most
/// [`MAX_REPLY`] bytes; a record that is no call ends the connection.
pub fn rpc_record(data: &[u8]) {
    let nfs = nfs();
    let stream = nfs.with_handles(data);
    let Ok((records, _rest)) = wire::rpc::split(&stream, MAX_RECORD) else {
        return;
    };
    for record in records.iter().take(MAX_CALLS) {
        assert!(
            record.len() <= MAX_RECORD,
            "a record of {} bytes",
            record.len()
        );
        let Some(reply) = wire::rpc::answer(&nfs.door, record) else {
            return;
        };
        assert!(reply.len() <= MAX_REPLY, "a reply of {} bytes", reply.len());
        assert_eq!(reply.get(..4), record.get(..4), "the reply's xid");
        assert_eq!(reply.get(4..8), Some(&[0, 0, 0, 1][..]), "not a REPLY");
    }
}
