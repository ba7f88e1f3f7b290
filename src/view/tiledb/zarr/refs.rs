//! `fragfs refs`: a kerchunk reference set (version 1) of a state's Zarr v2 store
//! (`zarr/`, or `at/<T>/zarr/`), so that zarr-python, xarray and Dask read the array
//! through fsspec's `reference://` straight from the fragments' own files, with no
//! fragfs process in between.
//!
//! The metadata is inline. A chunk whose space tile one fragment's stored tile holds
//! whole ([`RegionTile::Stored`]) is a reference to that tile's bytes in the fragment's
//! data file, decoded by the `fragfs_tile` codec ([`TileCodec`], which the Python
//! package registers with numcodecs); or, where every such tile of an array is one
//! filter chunk of a pipeline numcodecs has (ZSTD, GZIP, BYTESHUFFLE + ZSTD, none) and
//! nothing is served, a reference to that chunk's compressed bytes under the standard
//! codecs, which readers without fragfs read too. Any other chunk is a merge: inline
//! when small, else a URL of a running `fragfs serve` of the array, else refused. A
//! reference set that left a chunk out would read its fill value, wrong data: so when
//! one chunk can be neither, the set is not made, and every such chunk is named with
//! why.
//!
//! Arrays of variable-length elements keep their own codecs (their chunks are merges
//! by nature: inline or served); coordinate arrays are computed, given inline.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::node::ZNode;
use super::place::zarr_dir;
use crate::encode::kerchunk::{reference_set, url_segment, Reference};
use crate::encode::numcodecs::{Compressor, StandardCodecs};
use crate::encode::zarr::{key_v2, Elements, ZArray, ZDesc, ZMeta};
use crate::error::{Error, Result};
use crate::read::merge::{Merged, RegionTile};
use crate::read::tile_codec::TileCodec;
use crate::read::tile_ref::{Standard, StandardSpan, StoredTile};
use crate::view::file_tree::FileTree;
use crate::view::tiledb::array_tree::ArrayTree;
use crate::view::tiledb::node::When;

/// Chunks of at most this many decoded bytes are given inline by default (a reference
/// set of a mostly merged array stays a few times the size of its data at most).
pub const DEFAULT_INLINE_LIMIT: u64 = 64 << 10;

/// A coordinate array is given inline up to this many bytes (its values are computed:
/// 8 MiB is a million int64 coordinates), whatever the inline limit.
pub const COORD_INLINE_LIMIT: u64 = 64 << 20;

/// What a served chunk of an array read by `fragfs_tile` starts with: the codec's
/// envelope of decoded chunks (the HTTP door adds it to a file asked for with
/// [`ENVELOPE_QUERY`]).
pub const ENVELOPE: [u8; 8] = crate::read::tile_codec::ENVELOPE;

/// The query that asks the HTTP door for a file behind [`ENVELOPE`].
pub const ENVELOPE_QUERY: &str = "envelope=fragfs_tile";

/// Coordinate chunks a reference set serves at most (a domain of 2^32 int64
/// coordinates), beyond the inline limit.
const COORD_SERVE_CHUNKS: u64 = 4096;

/// What `fragfs refs` was asked.
#[derive(Debug, Clone)]
pub struct RefOptions {
    /// A running `fragfs serve` (HTTP door) of the same array: merged chunks over
    /// [`RefOptions::inline_limit`] are referenced to its files.
    pub serve_url: Option<String>,
    /// Decoded bytes up to which a merged chunk is given inline.
    pub inline_limit: u64,
}

impl Default for RefOptions {
    fn default() -> RefOptions {
        RefOptions {
            serve_url: None,
            inline_limit: DEFAULT_INLINE_LIMIT,
        }
    }
}

/// How many of each kind of reference a set holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub metadata: u64,
    /// Chunks referenced to stored tiles, decoded by `fragfs_tile`.
    pub referenced: u64,
    /// Chunks referenced to stored bytes that standard numcodecs codecs decode.
    pub standard: u64,
    pub inlined: u64,
    pub served: u64,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} chunks referenced (fragfs_tile), {} referenced (standard codecs), {} inlined, \
             {} served; {} metadata files",
            self.referenced, self.standard, self.inlined, self.served, self.metadata
        )
    }
}

/// A reference set, or the chunks it could not reference.
#[derive(Debug)]
pub enum Refs {
    Made {
        json: Vec<u8>,
        summary: Summary,
    },
    /// Each chunk (its key in the store) that could be neither referenced, inlined nor
    /// served, with why.
    Refused(Vec<(String, String)>),
}

/// What one chunk becomes, before the array's codec is chosen.
enum Plan {
    Stored(Box<StoredTile>, Option<StandardSpan>),
    /// A merge: given inline or served; why it is one.
    Merge(String),
}

/// The codecs an array's `.zarray` names.
#[derive(Debug, Clone, PartialEq)]
enum Codecs {
    /// The store's own (no compressor; a filter for variable-length elements).
    Own,
    Standard(StandardCodecs),
    Tile(Box<TileCodec>),
}

impl ArrayTree {
    /// The reference set of the state at `w` (`None`: latest) of this array's Zarr v2
    /// store, as `options` say (see the module's documentation).
    pub fn refs(&self, w: When, options: &RefOptions) -> Result<Refs> {
        let array = self.array();
        if let Err(why) = crate::encode::zarr::has_store(&array.latest_schema().schema) {
            return Err(Error::NotAnArray(format!(
                "{}: {why}: a reference set is made of a dense array's Zarr store",
                array.location()
            )));
        }
        let (merged, store) = self.zstore(w)?;
        let mut refs: BTreeMap<String, Reference> = BTreeMap::new();
        let mut summary = Summary::default();
        let mut refused = Vec::new();
        for meta in [ZMeta::Zgroup, ZMeta::Zattrs] {
            let text = self.zarr_meta(w, &ZNode::GroupMeta(meta))?;
            refs.insert(meta.file_name().into(), text_ref(text));
            summary.metadata += 1;
        }
        for d in &store.arrays {
            let array = ArrayRefs {
                tree: self,
                w,
                merged: &merged,
                d,
                options,
            };
            array.add(&mut refs, &mut summary, &mut refused)?;
        }
        if !refused.is_empty() {
            return Ok(Refs::Refused(refused));
        }
        Ok(Refs::Made {
            json: reference_set(&refs),
            summary,
        })
    }
}

/// Metadata as text (it is JSON: UTF-8 always).
fn text_ref(bytes: Vec<u8>) -> Reference {
    Reference::Text(String::from_utf8_lossy(&bytes).into_owned())
}

/// The standard codecs that read what `standard` names.
fn standard_codecs(standard: Standard) -> StandardCodecs {
    let (shuffle, compressor) = match standard {
        Standard::Raw => (None, Compressor::None),
        Standard::Zstd => (None, Compressor::Zstd),
        Standard::Zlib => (None, Compressor::Zlib),
        Standard::ShuffleZstd { elementsize } => (Some(elementsize), Compressor::Zstd),
    };
    StandardCodecs {
        shuffle,
        compressor,
    }
}

/// One array of the store being referenced.
struct ArrayRefs<'a> {
    tree: &'a ArrayTree,
    w: When,
    merged: &'a Merged,
    d: &'a ZDesc,
    options: &'a RefOptions,
}

impl ArrayRefs<'_> {
    /// The array's metadata and chunks, into `refs`; the chunks it cannot reference
    /// into `refused`.
    fn add(
        &self,
        refs: &mut BTreeMap<String, Reference>,
        summary: &mut Summary,
        refused: &mut Vec<(String, String)>,
    ) -> Result<()> {
        let d = self.d;
        let chunks: Vec<Vec<u64>> = d
            .chunk_files(&self.merged.written_domains())
            .into_iter()
            .collect();
        let mut plans = Vec::with_capacity(chunks.len());
        for c in &chunks {
            plans.push(self.plan(c)?);
        }
        let codecs = self.codecs(&mut plans);
        let attrs = self
            .tree
            .zarr_meta(self.w, &ZNode::ArrayMeta(d.array, ZMeta::Zattrs))?;
        refs.insert(format!("{}/.zattrs", d.name), text_ref(attrs));
        let mut zarray = d.document(ZMeta::Zarray);
        match &codecs {
            Codecs::Own => {}
            Codecs::Standard(s) => {
                zarray["compressor"] = s.compressor_json();
                zarray["filters"] = s.filters_json();
            }
            Codecs::Tile(t) => {
                zarray["compressor"] = t.to_json();
                zarray["filters"] = Value::Null;
            }
        }
        refs.insert(
            format!("{}/.zarray", d.name),
            text_ref(crate::view::tiledb::json::to_bytes(&zarray)),
        );
        summary.metadata += 2;
        for (c, plan) in chunks.iter().zip(plans) {
            let key = format!("{}/{}", d.name, key_v2(c));
            let reference = match plan {
                Plan::Stored(tile, standard) => match (&codecs, standard) {
                    (Codecs::Standard(_), Some(span)) => {
                        summary.standard += 1;
                        Reference::Range {
                            url: tile.url(),
                            offset: span.offset,
                            len: span.len,
                        }
                    }
                    _ => {
                        summary.referenced += 1;
                        Reference::Range {
                            url: tile.url(),
                            offset: tile.offset,
                            len: tile.len,
                        }
                    }
                },
                Plan::Merge(why) => match self.merged_chunk(c, &codecs, summary)? {
                    Ok(r) => r,
                    Err(limit) => {
                        refused.push((
                            format!("{}/{key}", zarr_dir(self.w)),
                            format!("{why}: {limit}"),
                        ));
                        continue;
                    }
                },
            };
            refs.insert(key, reference);
        }
        Ok(())
    }

    /// What chunk `c` is: a stored tile with this array's grid, or a merge and why.
    fn plan(&self, c: &[u64]) -> Result<Plan> {
        let d = self.d;
        let (f, validity) = match d.array {
            ZArray::Values(f) if d.ty.elements == Elements::Fixed => (f, false),
            ZArray::Validity(f) => (f, true),
            ZArray::Values(_) => {
                return Ok(Plan::Merge(
                    "variable-length elements are encoded per chunk".into(),
                ))
            }
            ZArray::Coords(_) => return Ok(Plan::Merge("coordinates are computed".into())),
        };
        // The cells of the chunk inside the domain: Zarr chunks run past its end, and
        // what a tile holds there is no one's.
        let region: Vec<(i128, i128)> = d
            .region(c)
            .into_iter()
            .zip(d.origin.iter().zip(&d.shape))
            .map(|((lo, hi), (&o, &n))| (lo, hi.min(o + i128::from(n) - 1)))
            .collect();
        Ok(match self.merged.region_tile(f, validity, &region)? {
            RegionTile::Merge(why) => Plan::Merge(why),
            RegionTile::Stored {
                tile,
                standard,
                fragment,
            } => {
                let dims = d.origin.len();
                let fits = tile.codec.tile_shape == d.chunks[..dims]
                    && tile.codec.cell_size == d.cell_bytes()
                    && tile.codec.decoded_size() == d.fixed_chunk_bytes();
                match fits {
                    true => Plan::Stored(tile, standard),
                    false => Plan::Merge(format!(
                        "fragment {fragment}'s tile is not this chunk's shape"
                    )),
                }
            }
        })
    }

    /// The array's codecs, given what its chunks are: none referenced, the store's own;
    /// every referenced tile read by one set of standard codecs, and nothing served,
    /// those; else `fragfs_tile` with the configuration most tiles share (tiles of
    /// another, a fragment of another format version or pipeline, become merges).
    fn codecs(&self, plans: &mut [Plan]) -> Codecs {
        let mut counts: Vec<(TileCodec, usize, usize)> = Vec::new();
        for (i, p) in plans.iter().enumerate() {
            if let Plan::Stored(tile, _) = p {
                match counts.iter_mut().find(|(c, ..)| *c == tile.codec) {
                    Some(entry) => entry.1 += 1,
                    None => counts.push((tile.codec.clone(), 1, i)),
                }
            }
        }
        // The most shared configuration; ties go to the first chunk's.
        let Some(codec) = counts
            .into_iter()
            .max_by_key(|(_, n, first)| (*n, std::cmp::Reverse(*first)))
            .map(|(c, ..)| c)
        else {
            return Codecs::Own;
        };
        for p in plans.iter_mut() {
            if let Plan::Stored(tile, _) = p {
                if tile.codec != codec {
                    let why = format!(
                        "{}: its tile codec is not the array's (another format version or \
                         filter pipeline)",
                        tile.place
                    );
                    *p = Plan::Merge(why);
                }
            }
        }
        let chunk_bytes = self.d.fixed_chunk_bytes().unwrap_or(u64::MAX);
        let serves = self.options.serve_url.is_some()
            && chunk_bytes > self.options.inline_limit
            && plans.iter().any(|p| matches!(p, Plan::Merge(_)));
        let mut standards = plans.iter().filter_map(|p| match p {
            Plan::Stored(_, standard) => Some(standard.map(|s| s.standard)),
            Plan::Merge(_) => None,
        });
        let first = standards.next().flatten();
        let one_standard = first.filter(|f| standards.all(|s| s == Some(*f)));
        match (one_standard, serves) {
            (Some(s), false) => Codecs::Standard(standard_codecs(s)),
            _ => Codecs::Tile(Box::new(codec)),
        }
    }

    /// A merged chunk (or coordinates): inline (encoded by the array's codecs) when
    /// small enough, else a URL of `--serve-url`; else why not (`Err`).
    fn merged_chunk(
        &self,
        c: &[u64],
        codecs: &Codecs,
        summary: &mut Summary,
    ) -> Result<std::result::Result<Reference, String>> {
        let d = self.d;
        let limit = self.options.inline_limit;
        let key = key_v2(c);
        let path = format!("{}/{}/{key}", zarr_dir(self.w), d.name);
        let coords = matches!(d.array, ZArray::Coords(_));
        let inline = match (coords, d.fixed_chunk_bytes()) {
            (true, _) => {
                let total = d.shape[0].saturating_mul(d.ty.size);
                total <= COORD_INLINE_LIMIT
            }
            (false, Some(size)) => size <= limit,
            // Variable-length: rendered to learn the size.
            (false, None) => true,
        };
        if inline {
            let bytes = self.read(&path)?;
            if bytes.len() as u64 <= limit || coords {
                let encoded = match codecs {
                    Codecs::Own => bytes,
                    Codecs::Standard(s) => {
                        s.encode(&bytes).map_err(|e| Error::io(path.as_str(), e))?
                    }
                    Codecs::Tile(_) => [&ENVELOPE[..], &bytes].concat(),
                };
                summary.inlined += 1;
                return Ok(Ok(Reference::Inline(encoded)));
            }
        }
        let Some(base) = &self.options.serve_url else {
            let size = match (coords, d.fixed_chunk_bytes()) {
                (true, _) => format!(
                    "a coordinate array of {} bytes, more than the {COORD_INLINE_LIMIT} given inline",
                    d.shape[0].saturating_mul(d.ty.size)
                ),
                (false, Some(size)) => format!("{size} bytes, more than --inline-limit {limit}"),
                (false, None) => format!("more than --inline-limit {limit} bytes"),
            };
            return Ok(Err(format!("{size}, and no --serve-url")));
        };
        if coords && d.chunk_counts()[0] > COORD_SERVE_CHUNKS {
            return Ok(Err(format!(
                "a coordinate array of more than {COORD_SERVE_CHUNKS} chunks"
            )));
        }
        let segments: Vec<String> = zarr_dir(self.w).split('/').map(url_segment).collect();
        let mut url = format!(
            "{}/{}/{}/{key}",
            base.trim_end_matches('/'),
            segments.join("/"),
            url_segment(&d.name)
        );
        if matches!(codecs, Codecs::Tile(_)) {
            url.push('?');
            url.push_str(ENVELOPE_QUERY);
        }
        summary.served += 1;
        Ok(Ok(Reference::Whole(url)))
    }

    /// The bytes of a file of the tree, whole.
    fn read(&self, path: &str) -> Result<Vec<u8>> {
        let tree = self.tree;
        let ino = tree.resolve(path)?;
        let mut out = Vec::new();
        loop {
            let before = out.len();
            tree.read_into(ino, before as u64, 1 << 20, &mut out)?;
            if out.len() == before {
                return Ok(out);
            }
        }
    }
}
