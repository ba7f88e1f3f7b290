//! Seeds for the fuzz targets, cut from real TileDB arrays and Filo chunks: each array's
//! files of generic tiles (`generic_tile`), its decoded schemas (`schema`), its footers
//! and metadata payloads with their schema (`fragment_metadata`), and the first tiles of
//! every field file, whole with their pipeline (`chunk_pipeline`) and chunk by chunk for
//! the filter reversed first (`filters`), in the layouts of the target bodies (`lib.rs`);
//! and for the network targets, what real clients send: request paths of the arrays'
//! trees, `Range` headers, `PROPFIND` bodies, `Authorization` values and NFS streams
//! ([`seed_wire`]).
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

// ---- The network doors' parsers ------------------------------------------------------

use fragfs::view::{ArrayTree, FileTree, Kind, ROOT};
use fragfs::wire::path::encode;
use fragfs::wire::rpc::mark;
use fragfs::wire::xdr::Writer;

/// Paths taken from each array's tree for `request_path` (and file sizes for
/// `range_header`): a few entries of every folder, breadth first.
const PATHS_PER_ARRAY: usize = 64;
/// Entries taken from one folder of a tree's walk.
const ENTRIES_PER_FOLDER: usize = 8;

/// Seeds of the network targets: request paths of the trees of `arrays` (every array
/// folder found, as [`find_arrays`] gives them) and sizes of their files, with the
/// headers, bodies and NFS streams real clients send.
pub fn seed_wire(arrays: &[PathBuf], seeds: &mut Seeds) {
    let mut sizes = vec![0, 1, 100, 1000, 4096, 1 << 20, 5 << 30, u64::MAX];
    for array in arrays {
        seed_paths(array, seeds, &mut sizes);
    }
    for path in [
        // Finder and Windows' WebDAV client ask for these in every folder they open;
        // browsers for a favicon; hostile clients for what they should not reach.
        "/",
        "/._latest",
        "/.DS_Store",
        "/latest/.hidden",
        "/desktop.ini",
        "/favicon.ico",
        "/latest/a/values.bin",
        "/fragments/",
        "/../etc/passwd",
        "/a/%2e%2e/b",
        "/a/./b",
        "/a//b",
        "/a%2Fb",
        "/a%5Cb",
        "/a%00b",
        "/%C3%A9t%C3%A9/",
        "/%zz",
        "/a%4",
    ] {
        seeds.add("request_path", path.as_bytes().to_vec());
    }
    sizes.sort_unstable();
    sizes.dedup();
    for size in &sizes {
        for header in RANGES {
            let mut input = size.to_le_bytes().to_vec();
            input.extend(header.as_bytes());
            seeds.add("range_header", input);
        }
    }
    for body in PROPFINDS {
        seeds.add("propfind_body", body.as_bytes().to_vec());
    }
    for value in authorizations() {
        seeds.add("basic_auth", value);
    }
    for stream in nfs_streams() {
        seeds.add("rpc_record", stream);
    }
}

/// `request_path` seeds from the tree of the array at `root`: each path as fragfs's own
/// listings link it (every name [`encode`]d) and as a browser or curl sends it (only
/// what must be escaped is); folders with their trailing `/`.
fn seed_paths(root: &Path, seeds: &mut Seeds, sizes: &mut Vec<u64>) {
    let options = OpenOptions {
        key: Some(super::KEY),
    };
    let Ok(tree) = ArrayTree::open_path(root, options, 16 << 20) else {
        return;
    };
    let mut queue = std::collections::VecDeque::from([(Vec::<String>::new(), ROOT)]);
    let mut taken = 0;
    while let Some((names, dir)) = queue.pop_front() {
        let Ok(entries) = tree.list(dir) else {
            continue;
        };
        for entry in entries.into_iter().take(ENTRIES_PER_FOLDER) {
            if taken == PATHS_PER_ARRAY {
                return;
            }
            taken += 1;
            let mut names = names.clone();
            names.push(entry.name);
            let slash = if entry.kind == Kind::Dir { "/" } else { "" };
            for spell in [encode as fn(&str) -> String, as_a_browser_sends] {
                let path: String = names.iter().map(|n| format!("/{}", spell(n))).collect();
                seeds.add("request_path", format!("{path}{slash}").into_bytes());
            }
            if entry.kind == Kind::Dir {
                queue.push_back((names, entry.ino));
            } else if let Ok(stat) = tree.stat(entry.ino) {
                if stat.exact_size && sizes.len() < 32 {
                    sizes.push(stat.size);
                }
            }
        }
    }
}

/// A name escaped as browsers and curl escape a path: controls, space, `"#%<>?[\]^`` `
/// `{|}` and every non-ASCII byte; sub-delimiters, `:` and `@` as they are.
fn as_a_browser_sends(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_graphic() && !b"\"#%<>?[\\]^`{|}".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `Range` values real clients send: curl's `-r`, GDAL's `/vsicurl/` (16 KiB blocks,
/// then doubling), fsspec's HTTPFileSystem (5 MiB blocks, and a file's tail for
/// Parquet and Zarr), DuckDB's httpfs, Chromium's media player, and what the RFC
/// allows beside (several ranges, spaces, other units).
const RANGES: &[&str] = &[
    "bytes=0-99",
    "bytes=100-",
    "bytes=-500",
    "bytes=0-16383",
    "bytes=16384-49151",
    "bytes=0-5242879",
    "bytes=5242880-10485759",
    "bytes=-8",
    "bytes=0-1048575",
    "bytes=0-",
    "bytes=0-0",
    "bytes=0-1,5-6",
    "bytes=500-999, 2000-2499",
    "bytes= 10 - 20 ",
    "bytes=10-5",
    "bytes=99999999999999999999-",
    "bytes=-0",
    "items=0-1",
    "",
];

/// `PROPFIND` bodies of real WebDAV clients, and the RFC's allprop, propname and
/// include forms.
const PROPFINDS: &[&str] = &[
    // macOS Finder (webdavfs).
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n<D:prop>\n\
     <D:getlastmodified/>\n<D:getcontentlength/>\n<D:creationdate/>\n<D:resourcetype/>\n\
     </D:prop>\n</D:propfind>\n",
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n\
     <D:prop xmlns:A=\"http://www.apple.com/webdav_fs/props/\">\n<D:getlastmodified/>\n\
     <D:getcontentlength/>\n<D:creationdate/>\n<D:resourcetype/>\n<A:appledoubleheader/>\n\
     </D:prop>\n</D:propfind>\n",
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n<D:prop>\n\
     <D:quota-available-bytes/>\n<D:quota-used-bytes/>\n</D:prop>\n</D:propfind>\n",
    // Windows' WebDAV redirector (Mini-Redirector), its listing and its Win32 attributes.
    "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propfind xmlns:D=\"DAV:\"><D:prop>\
     <D:name/><D:parentname/><D:href/><D:ishidden/><D:isreadonly/><D:getcontenttype/>\
     <D:contentclass/><D:getcontentlanguage/><D:creationdate/><D:lastaccessed/>\
     <D:getlastmodified/><D:getcontentlength/><D:iscollection/><D:isstructureddocument/>\
     <D:defaultdocument/><D:displayname/><D:isroot/><D:resourcetype/></D:prop></D:propfind>",
    "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propfind xmlns:D=\"DAV:\" \
     xmlns:Z=\"urn:schemas-microsoft-com:\"><D:prop><D:resourcetype/><D:getcontentlength/>\
     <D:getlastmodified/><Z:Win32CreationTime/><Z:Win32LastAccessTime/>\
     <Z:Win32LastModifiedTime/><Z:Win32FileAttributes/></D:prop></D:propfind>",
    // davfs2 (neon: every element carries its namespace).
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<propfind xmlns=\"DAV:\"><prop>\n\
     <resourcetype xmlns=\"DAV:\"/>\n<getcontentlength xmlns=\"DAV:\"/>\n\
     <getetag xmlns=\"DAV:\"/>\n<getlastmodified xmlns=\"DAV:\"/>\n\
     <executable xmlns=\"http://apache.org/dav/props/\"/>\n</prop></propfind>\n",
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<propfind xmlns=\"DAV:\"><prop>\n\
     <quota-available-bytes xmlns=\"DAV:\"/>\n<quota-used-bytes xmlns=\"DAV:\"/>\n\
     </prop></propfind>\n",
    // rclone (owncloud and nextcloud properties beside DAV's).
    "<?xml version=\"1.0\"?>\n<d:propfind  xmlns:d=\"DAV:\" xmlns:oc=\"http://owncloud.org/ns\" \
     xmlns:nc=\"http://nextcloud.org/ns\">\n <d:prop>\n  <d:displayname />\n  \
     <d:getlastmodified />\n  <d:getcontentlength />\n  <d:resourcetype />\n  \
     <d:getcontenttype />\n  <oc:checksums />\n  <oc:permissions />\n </d:prop>\n</d:propfind>\n",
    // allprop (cadaver, litmus, Windows' first request), propname, include, none.
    "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n<D:propfind xmlns:D=\"DAV:\">\n<D:allprop/>\n\
     </D:propfind>",
    "<?xml version=\"1.0\" encoding=\"utf-8\" ?><propfind xmlns=\"DAV:\"><propname/></propfind>",
    "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propfind xmlns:D=\"DAV:\"><D:allprop/>\
     <D:include><D:supported-live-property-set/><D:supported-report-set/></D:include>\
     </D:propfind>",
    "",
];

/// `Authorization` values: basic credentials as curl (`-u`), GDAL (`GDAL_HTTP_USERPWD`,
/// password only), fsspec (aiohttp's BasicAuth, Latin-1), rclone and Windows (a domain
/// user) send them, unpadded and lower-case forms, bearer tokens (a JWT, as GDAL's
/// `GDAL_HTTP_HEADERS` sends one), NTLM and Negotiate (Windows tries them first), and
/// bare base64 text for `base64_decode` alone.
fn authorizations() -> Vec<Vec<u8>> {
    let basic = |pair: &[u8]| format!("Basic {}", super::base64_encode(pair)).into_bytes();
    let mut out = vec![
        basic(b"fragfs:s3cret-token"),
        basic(b":s3cret-token"),
        basic(b"us\xe9r:p\xe4ss"),
        basic(b"WORKGROUP\\user:token"),
        basic(b"rclone:0123456789abcdef0123456789abcdef"),
        basic(b""),
        b"Basic dXNlcjpzM2NyZXQ".to_vec(),
        b"basic   dXNlcjpzM2NyZXQ=  ".to_vec(),
        b"Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmcmFnZnMifQ.c2lnbmF0dXJl"
            .to_vec(),
        b"bearer 0123456789abcdef".to_vec(),
        b"NTLM TlRMTVNTUAABAAAAB4IIogAAAAAAAAAAAAAAAAAAAAAKAGFKAAAADw==".to_vec(),
        b"Negotiate YIIBhgYGKwYBBQUCoIIBejCCAXagMDAuBgkqhkiC9xIBAgIGCSqGSIb3EgECAgYKKwYBBAGCNwICHgYKKwYBBAGCNwICCg==".to_vec(),
        b"Digest username=\"u\", realm=\"fragfs\", nonce=\"abc\", uri=\"/\", response=\"0\"".to_vec(),
    ];
    for text in [&b"dXNlcjpzM2NyZXQ="[..], b"YQ==", b"YWI=", b"YWJj", b""] {
        out.push(text.to_vec());
    }
    out
}

// The programs and procedures of the NFS door (RFC 1813, RFC 1833).
const NFS: u32 = 100_003;
const MOUNT: u32 = 100_005;
const PORTMAP: u32 = 100_000;

/// One call record as Linux's NFS client sends it: AUTH_SYS credentials (stamp, host
/// name, uid, gid, groups), an AUTH_NONE verifier, then the arguments.
fn call(xid: u32, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    for v in [xid, 0, 2, prog, vers, proc_] {
        w.u32(v);
    }
    let mut cred = Writer::default();
    cred.u32(0x6a3b_1c00); // stamp
    cred.opaque(b"client");
    cred.u32(1000);
    cred.u32(1000);
    cred.u32(2); // groups
    cred.u32(1000);
    cred.u32(27);
    w.u32(1); // AUTH_SYS
    w.opaque(&cred.buf);
    w.u32(0); // AUTH_NONE
    w.opaque(&[]);
    w.buf.extend_from_slice(args);
    w.buf
}

/// XDR arguments built by `f`.
fn args(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::default();
    f(&mut w);
    w.buf
}

/// The records of a stream, each in one fragment.
fn stream(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        out.extend(mark(r.len()));
        out.extend(r);
    }
    out
}

/// `rpc_record` seeds: what NFS clients send on a connection, handles as the harness's
/// placeholders: a mount (portmapper GETPORT, MOUNT MNT of `/`), Linux's first calls
/// after it (NULL, FSINFO, PATHCONF, FSSTAT, GETATTR), `ls -l` (ACCESS, READDIRPLUS,
/// LOOKUP, GETATTR), `cat` (LOOKUP, ACCESS, READ at 0 and after), macOS's READDIR pages,
/// a LOOKUP of every name at the root of the door's tree, writes (refused), a record
/// sent in two fragments and a stream cut inside a record.
fn nfs_streams() -> Vec<Vec<u8>> {
    use super::{DIR_PLACEHOLDER as DIR, FILE_PLACEHOLDER as FILE, ROOT_PLACEHOLDER as ROOT_FH};
    let fh = |w: &mut Writer, h: &[u8; 16]| w.opaque(h);
    let lookup = |xid, dir: &[u8; 16], name: &str| {
        call(
            xid,
            NFS,
            3,
            3,
            &args(|w| {
                fh(w, dir);
                w.opaque(name.as_bytes());
            }),
        )
    };
    let on = |xid, proc_, h: &[u8; 16]| call(xid, NFS, 3, proc_, &args(|w| fh(w, h)));
    let read = |xid, offset: u64, count: u32| {
        call(
            xid,
            NFS,
            3,
            6,
            &args(|w| {
                fh(w, &FILE);
                w.u64(offset);
                w.u32(count);
            }),
        )
    };
    let readdir = |xid, h: &[u8; 16], cookie: u64, plus: bool| {
        let proc_ = if plus { 17 } else { 16 };
        call(
            xid,
            NFS,
            3,
            proc_,
            &args(|w| {
                fh(w, h);
                w.u64(cookie);
                w.fixed(&[0; 8]);
                if plus {
                    w.u32(4096); // dircount
                    w.u32(32768); // maxcount
                } else {
                    w.u32(4096);
                }
            }),
        )
    };
    let access = |xid, h: &[u8; 16], mask: u32| {
        call(
            xid,
            NFS,
            3,
            4,
            &args(|w| {
                fh(w, h);
                w.u32(mask);
            }),
        )
    };
    let mount = [
        // GETPORT of MOUNT v3 over TCP.
        call(
            1,
            PORTMAP,
            2,
            3,
            &args(|w| {
                for v in [MOUNT, 3, 6, 0] {
                    w.u32(v);
                }
            }),
        ),
        call(2, MOUNT, 3, 0, &[]),
        call(3, MOUNT, 3, 1, &args(|w| w.opaque(b"/"))),
        call(4, MOUNT, 3, 5, &[]),
        call(5, MOUNT, 3, 3, &args(|w| w.opaque(b"/"))),
    ];
    let linux_first = [
        call(10, NFS, 3, 0, &[]),
        on(11, 19, &ROOT_FH), // FSINFO
        on(12, 20, &ROOT_FH), // PATHCONF
        on(13, 18, &ROOT_FH), // FSSTAT
        on(14, 1, &ROOT_FH),  // GETATTR
    ];
    let ls = [
        access(20, &ROOT_FH, 0x1f),
        readdirplus_first(21),
        lookup(22, &ROOT_FH, "latest"),
        on(23, 1, &DIR),
        readdir(24, &DIR, 0, true),
    ];
    let cat = [
        lookup(30, &DIR, "i32"),
        access(31, &FILE, 0x2d),
        on(32, 1, &FILE),
        read(33, 0, 4096),
        read(34, 4096, 4096),
        read(35, 0, 32768),
    ];
    let macos = [
        readdir(40, &ROOT_FH, 0, false),
        readdir(41, &ROOT_FH, 3, false),
        readdir(42, &DIR, 0, false),
        lookup(43, &ROOT_FH, "._latest"),
        lookup(44, &ROOT_FH, ".DS_Store"),
        lookup(45, &ROOT_FH, ".."),
    ];
    let writes = [
        call(
            50,
            NFS,
            3,
            8,
            &args(|w| {
                fh(w, &ROOT_FH);
                w.opaque(b"new");
                w.u32(0); // UNCHECKED
                w.fixed(&[0; 24]);
            }),
        ),
        call(
            51,
            NFS,
            3,
            7,
            &args(|w| {
                fh(w, &FILE);
                w.u64(0);
                w.u32(5);
                w.u32(0);
                w.opaque(b"bytes");
            }),
        ),
        on(52, 5, &FILE), // READLINK
    ];
    let mut out = vec![
        stream(&mount),
        stream(&linux_first),
        stream(&ls),
        stream(&cat),
        stream(&macos),
        stream(&writes),
    ];
    // A LOOKUP then GETATTR of every name at the root of the served tree.
    let nfs = super::nfs();
    if let Ok(entries) = nfs.tree.list(ROOT) {
        for (i, entry) in entries.iter().enumerate() {
            let xid = 100 + 2 * i as u32;
            out.push(stream(&[
                lookup(xid, &ROOT_FH, &entry.name),
                on(xid + 1, 1, &ROOT_FH),
            ]));
        }
    }
    // READ sent as two fragments (a client may cut a record anywhere), then a GETATTR.
    let record = read(60, 0, 8192);
    let cut = record.len() / 2;
    let mut two = (cut as u32).to_be_bytes().to_vec();
    two.extend(&record[..cut]);
    two.extend(mark(record.len() - cut));
    two.extend(&record[cut..]);
    two.extend(stream(&[on(61, 1, &FILE)]));
    out.push(two);
    // A stream cut inside its second record (the connection waits for the rest).
    let mut cut_short = stream(&[on(70, 1, &ROOT_FH), read(71, 0, 4096)]);
    cut_short.truncate(cut_short.len() - 10);
    out.push(cut_short);
    out
}

/// Linux's first READDIRPLUS of the root (cookie 0, a zero verifier).
fn readdirplus_first(xid: u32) -> Vec<u8> {
    call(
        xid,
        NFS,
        3,
        17,
        &args(|w| {
            w.opaque(&super::ROOT_PLACEHOLDER);
            w.u64(0);
            w.fixed(&[0; 8]);
            w.u32(4096);
            w.u32(32768);
        }),
    )
}
