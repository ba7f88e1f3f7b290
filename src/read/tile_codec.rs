//! The codec of one stored tile: what a reader needs to turn the bytes of a dense
//! fragment's data tile, read straight from its file, into the chunk `zarr/` shows (its
//! cells un-filtered, row-major). A kerchunk reference set points Zarr at those bytes
//! and names this codec (`fragfs_tile`) with its [configuration](TileCodec::to_json):
//! the Python package's numcodecs codec parses that and decodes here, with the same
//! chunk walk and filters as every other read.
//!
//! A chunk that no single stored tile holds (a merge of fragments, fill values) is given
//! decoded instead, behind the 8 bytes of [`ENVELOPE`]: read as a little-endian u64 they
//! are a chunk count no tile can hold (its top byte is 0xFF), so the two never mix up.
//!
//! The configuration never holds a key: tiles of encrypted arrays are not referenced.

use serde_json::{json, Value};

use crate::error::{Error, Place, Result};
use crate::filter::{unfilter_chunk_into, ChunkContext};
use crate::format::chunked::parse_chunks;
use crate::format::{Datatype, Filter, FilterPipeline, Reader};

/// The codec's id, as numcodecs registers it.
pub const CODEC_ID: &str = "fragfs_tile";

/// What opens a chunk given decoded: `fragfs` 0x01 0xFF. As a little-endian u64 its top
/// byte is 0xFF, a count of chunks that would need more than 2^67 bytes of headers.
pub const ENVELOPE: [u8; 8] = *b"fragfs\x01\xff";

/// One stored tile's codec: the field's datatype and cell size, the fragment's format
/// version and filter pipeline (what un-filtering needs, `05-tile-and-filters.md`), and
/// the tile's shape and cell order (a column-major tile is put in row-major order, a
/// Zarr chunk's).
#[derive(Debug, Clone, PartialEq)]
pub struct TileCodec {
    pub datatype: Datatype,
    /// Bytes per cell: the values of a cell together (`cell_val_num × type size`).
    pub cell_size: u64,
    pub format_version: u32,
    pub pipeline: FilterPipeline,
    /// Cells per dimension of the tile (the space tile's extents).
    pub tile_shape: Vec<u64>,
    /// The tile's cells are stored column-major (first dimension fastest).
    pub col_major: bool,
}

/// Where every codec error happens, for messages.
fn place() -> Place {
    Place::file(CODEC_ID)
}

fn bad_config(reason: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("{CODEC_ID} configuration: {reason}"))
}

impl TileCodec {
    /// Bytes of a decoded chunk (`None` past 64 bits).
    pub fn decoded_size(&self) -> Option<u64> {
        self.tile_shape
            .iter()
            .try_fold(self.cell_size, |n, &e| n.checked_mul(e))
    }

    /// The configuration numcodecs stores in `.zarray` (`{"id": "fragfs_tile", ...}`),
    /// keys sorted. `pipeline` is the pipeline as TileDB stores it, in hex, which
    /// rebuilds it exactly; `filters` names its filters for a reader of the JSON (and is
    /// checked against it).
    pub fn to_json(&self) -> Value {
        let hex: String = self
            .pipeline
            .to_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let filters: Vec<&str> = self.pipeline.filters.iter().map(Filter::name).collect();
        json!({
            "cell_order": if self.col_major { "col-major" } else { "row-major" },
            "cell_size": self.cell_size,
            "datatype": self.datatype.name(),
            "decoded_size": self.decoded_size(),
            "filters": filters,
            "format_version": self.format_version,
            "id": CODEC_ID,
            "pipeline": hex,
            "tile_shape": self.tile_shape,
        })
    }

    /// The codec a configuration describes (the `id` may be left out, as numcodecs
    /// leaves it out of `from_config`). Everything is checked: an unknown key, a
    /// pipeline whose bytes do not parse whole, sizes that disagree.
    pub fn from_json(config: &Value) -> Result<TileCodec> {
        let map = config
            .as_object()
            .ok_or_else(|| bad_config("not a JSON object"))?;
        const KEYS: [&str; 9] = [
            "cell_order",
            "cell_size",
            "datatype",
            "decoded_size",
            "filters",
            "format_version",
            "id",
            "pipeline",
            "tile_shape",
        ];
        if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(bad_config(format!("unknown key {k:?}")));
        }
        let get = |k: &str| map.get(k).ok_or_else(|| bad_config(format!("no {k:?}")));
        let text = |k: &str| {
            get(k)?
                .as_str()
                .ok_or_else(|| bad_config(format!("{k:?} is not a string")))
        };
        let number = |k: &str| {
            get(k)?
                .as_u64()
                .ok_or_else(|| bad_config(format!("{k:?} is not a whole number")))
        };
        if let Some(id) = map.get("id") {
            if id.as_str() != Some(CODEC_ID) {
                return Err(bad_config(format!("id {id}, not {CODEC_ID:?}")));
            }
        }
        let datatype = Datatype::from_name(text("datatype")?)
            .ok_or_else(|| bad_config(format!("unknown datatype {:?}", text("datatype"))))?;
        let col_major = match text("cell_order")? {
            "row-major" => false,
            "col-major" => true,
            other => return Err(bad_config(format!("cell_order {other:?}"))),
        };
        let pipeline = parse_pipeline(text("pipeline")?)?;
        if pipeline.filters.contains(&Filter::Encryption) {
            return Err(bad_config(
                "an encrypted pipeline: tiles of encrypted arrays are not referenced",
            ));
        }
        let names: Option<Vec<&str>> = get("filters")?
            .as_array()
            .map(|a| a.iter().map(Value::as_str).collect::<Option<_>>())
            .unwrap_or(None);
        let want: Vec<&str> = pipeline.filters.iter().map(Filter::name).collect();
        if names.as_ref() != Some(&want) {
            return Err(bad_config(format!(
                "\"filters\" is {}, the pipeline's are {want:?}",
                get("filters")?
            )));
        }
        let tile_shape = get("tile_shape")?
            .as_array()
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
            .filter(|s| !s.is_empty() && s.iter().all(|&e| e > 0))
            .ok_or_else(|| bad_config("\"tile_shape\" is not a list of positive numbers"))?;
        let format_version = u32::try_from(number("format_version")?)
            .map_err(|_| bad_config("format_version past 32 bits"))?;
        let codec = TileCodec {
            datatype,
            cell_size: number("cell_size")?,
            format_version,
            pipeline,
            tile_shape,
            col_major,
        };
        if codec.cell_size == 0 || !codec.cell_size.is_multiple_of(datatype.size()) {
            return Err(bad_config(format!(
                "cell_size {} is not a whole number of {} values",
                codec.cell_size,
                datatype.name()
            )));
        }
        let size = number("decoded_size")?;
        if codec.decoded_size() != Some(size) {
            return Err(bad_config(format!(
                "decoded_size {size}, but the tile's cells take {:?} bytes",
                codec.decoded_size()
            )));
        }
        Ok(codec)
    }

    /// [`TileCodec::from_json`] of a configuration as JSON text.
    pub fn from_json_text(config: &str) -> Result<TileCodec> {
        let value: Value = serde_json::from_str(config).map_err(bad_config)?;
        TileCodec::from_json(&value)
    }

    /// The chunk `bytes` hold: a stored tile (its chunks un-filtered, then put in
    /// row-major order) or a chunk given decoded behind [`ENVELOPE`]. Either must be
    /// exactly [`TileCodec::decoded_size`] bytes; a tile must end with its last chunk.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.decode_into(bytes, &mut out)?;
        Ok(out)
    }

    /// [`TileCodec::decode`] into `out`, which is cleared first: a caller that decodes
    /// tile after tile hands the same buffer back, and its memory is written again
    /// instead of being mapped (and zeroed by the kernel) anew for every tile.
    pub fn decode_into(&self, bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let size = self
            .decoded_size()
            .ok_or_else(|| bad_config("the tile's size is past 64 bits"))?;
        if let Some(raw) = bytes.strip_prefix(&ENVELOPE[..]) {
            if raw.len() as u64 != size {
                return Err(Error::corrupt(
                    place().detail("a decoded chunk"),
                    format!("{} bytes, the chunk has {size}", raw.len()),
                ));
            }
            out.extend_from_slice(raw);
            return Ok(());
        }
        let chunks = parse_chunks(bytes).map_err(|e| Error::format(place(), e))?;
        let end = chunks.last().map_or(8, |c| c.end());
        if end != bytes.len() as u64 {
            return Err(Error::corrupt(
                place(),
                format!(
                    "the tile's chunks end at byte {end} of {}: not one whole stored tile",
                    bytes.len()
                ),
            ));
        }
        let total: u64 = chunks.iter().map(|c| u64::from(c.unfiltered_len)).sum();
        if total != size {
            return Err(Error::corrupt(
                place(),
                format!("the tile's chunks hold {total} bytes, a tile of this codec {size}"),
            ));
        }
        let ctx = ChunkContext {
            field_type: self.datatype,
            cell_size: self.cell_size,
            format_version: self.format_version,
            key: None,
        };
        out.reserve(size as usize);
        for (i, c) in chunks.iter().enumerate() {
            let at = |r: std::ops::Range<u64>| &bytes[r.start as usize..r.end as usize];
            unfilter_chunk_into(
                &self.pipeline,
                &ctx,
                at(c.metadata_range()),
                at(c.data_range()),
                c.unfiltered_len,
                out,
            )
            .map_err(|e| Error::filter(place().chunk(i), e))?;
        }
        if self.col_major {
            *out = to_row_major(out, &self.tile_shape, self.cell_size as usize);
        }
        Ok(())
    }

    /// Whether the tile's stored order is row-major already: column-major with at most
    /// one dimension longer than one cell is the same order.
    pub fn is_row_major(&self) -> bool {
        !self.col_major || self.tile_shape.iter().filter(|&&e| e > 1).count() <= 1
    }
}

/// A pipeline from its stored bytes in hex, every byte used.
fn parse_pipeline(hex: &str) -> Result<FilterPipeline> {
    if !hex.len().is_multiple_of(2) {
        return Err(bad_config("\"pipeline\" has an odd number of hex digits"));
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| bad_config("\"pipeline\" is not hex"))?;
    let mut r = Reader::new(&bytes);
    let pipeline =
        FilterPipeline::parse(&mut r).map_err(|e| bad_config(format!("\"pipeline\": {e}")))?;
    if !r.is_empty() {
        return Err(bad_config(format!(
            "\"pipeline\": {} bytes after the last filter",
            r.remaining()
        )));
    }
    Ok(pipeline)
}

/// The cells of a column-major tile of `shape` (cells of `cell` bytes) in row-major
/// order (the last dimension fastest).
fn to_row_major(col: &[u8], shape: &[u64], cell: usize) -> Vec<u8> {
    let dims = shape.len();
    // Row-major strides, in cells.
    let mut strides = vec![1usize; dims];
    for d in (0..dims.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] as usize;
    }
    let mut out = vec![0u8; col.len()];
    let mut index = vec![0u64; dims];
    for src in col.chunks_exact(cell.max(1)) {
        let dest: usize = index
            .iter()
            .zip(&strides)
            .map(|(&i, &s)| i as usize * s)
            .sum();
        if let Some(d) = out.get_mut(dest * cell..dest * cell + src.len()) {
            d.copy_from_slice(src);
        }
        // The next cell of a column-major walk: the first dimension fastest.
        for (i, &e) in index.iter_mut().zip(shape) {
            *i += 1;
            if *i < e {
                break;
            }
            *i = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored tile: the chunk count, then each chunk's header, metadata and data.
    fn tile(chunks: &[(u32, &[u8], &[u8])]) -> Vec<u8> {
        let mut t = (chunks.len() as u64).to_le_bytes().to_vec();
        for (unfiltered, md, data) in chunks {
            t.extend(unfiltered.to_le_bytes());
            t.extend((data.len() as u32).to_le_bytes());
            t.extend((md.len() as u32).to_le_bytes());
            t.extend(*md);
            t.extend(*data);
        }
        t
    }

    /// ZSTD's header over one data part: 0 metadata parts, 1 data part and its sizes.
    fn zstd_md(raw: usize, compressed: usize) -> Vec<u8> {
        [0u32, 1, raw as u32, compressed as u32]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }

    fn codec(filters: Vec<Filter>, shape: Vec<u64>, col_major: bool) -> TileCodec {
        TileCodec {
            datatype: Datatype::Int32,
            cell_size: 4,
            format_version: 22,
            pipeline: FilterPipeline {
                max_chunk_size: 65536,
                filters,
            },
            tile_shape: shape,
            col_major,
        }
    }

    fn i32s(v: impl IntoIterator<Item = i32>) -> Vec<u8> {
        v.into_iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn the_configuration_round_trips_and_is_checked() {
        let c = TileCodec {
            datatype: Datatype::Float64,
            cell_size: 24,
            format_version: 11,
            pipeline: FilterPipeline {
                max_chunk_size: 1000,
                filters: vec![
                    Filter::ByteShuffle,
                    Filter::DoubleDelta {
                        reinterpret: Some(Datatype::Int64),
                    },
                    Filter::Zstd { level: 5 },
                ],
            },
            tile_shape: vec![4, 3],
            col_major: true,
        };
        let json = c.to_json();
        assert_eq!(json["id"], "fragfs_tile");
        assert_eq!(json["decoded_size"], 4 * 3 * 24);
        assert_eq!(
            json["filters"],
            json!(["BYTESHUFFLE", "DOUBLE_DELTA", "ZSTD"])
        );
        // Keys sorted: the same JSON every time.
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(TileCodec::from_json(&json).unwrap(), c);
        assert_eq!(TileCodec::from_json_text(&json.to_string()).unwrap(), c);
        let err = TileCodec::from_json_text("{").unwrap_err().to_string();
        assert!(err.starts_with("fragfs_tile configuration: EOF"), "{err}");
        // numcodecs' from_config gets the configuration without its id.
        let mut no_id = json.clone();
        no_id.as_object_mut().unwrap().remove("id");
        assert_eq!(TileCodec::from_json(&no_id).unwrap(), c);
        let broken = |key: &str, value: Value| {
            let mut j = json.clone();
            j[key] = value;
            TileCodec::from_json(&j).unwrap_err().to_string()
        };
        assert!(broken("id", json!("zstd")).contains("not \"fragfs_tile\""));
        assert!(broken("datatype", json!("INT33")).contains("unknown datatype"));
        assert!(broken("cell_order", json!("hilbert")).contains("cell_order"));
        assert!(broken("pipeline", json!("0g")).contains("not hex"));
        assert!(broken("pipeline", json!("00")).contains("\"pipeline\""));
        assert!(broken("filters", json!(["ZSTD"])).contains("the pipeline's are"));
        assert!(broken("tile_shape", json!([4, 0])).contains("tile_shape"));
        assert!(broken("decoded_size", json!(7)).contains("decoded_size 7"));
        assert!(broken("cell_size", json!(12)).contains("cell_size 12"));
        assert!(broken("extra", json!(1)).contains("unknown key \"extra\""));
        let hex = |p: &FilterPipeline| -> String {
            p.to_bytes().iter().map(|b| format!("{b:02x}")).collect()
        };
        let mut p = c.pipeline.clone();
        p.filters.push(Filter::Encryption);
        let mut j = json.clone();
        j["pipeline"] = json!(hex(&p));
        j["filters"] = json!(p.filters.iter().map(Filter::name).collect::<Vec<_>>());
        let err = TileCodec::from_json(&j).unwrap_err().to_string();
        assert!(err.contains("encrypted"), "{err}");
        let mut long = hex(&c.pipeline);
        long.push_str("00");
        assert!(broken("pipeline", json!(long)).contains("1 bytes after"));
    }

    #[test]
    fn a_stored_tile_decodes_chunk_by_chunk() {
        let c = codec(vec![Filter::Zstd { level: 1 }], vec![3, 2], false);
        let cells = i32s(0..6);
        let (a, b) = cells.split_at(16);
        let (za, zb) = (
            zstd::bulk::compress(a, 1).unwrap(),
            zstd::bulk::compress(b, 1).unwrap(),
        );
        let t = tile(&[
            (16, &zstd_md(16, za.len()), &za),
            (8, &zstd_md(8, zb.len()), &zb),
        ]);
        assert_eq!(c.decode(&t).unwrap(), cells);
        // Truncated: the last chunk runs past the bytes.
        let err = c.decode(&t[..t.len() - 1]).unwrap_err().to_string();
        assert!(
            err.contains("fragfs_tile") && err.contains("chunk"),
            "{err}"
        );
        // Bytes after the tile: not one stored tile.
        let mut long = t.clone();
        long.push(0);
        let err = c.decode(&long).unwrap_err().to_string();
        assert!(err.contains("not one whole stored tile"), "{err}");
        // Another tile's size.
        let small = codec(vec![Filter::Zstd { level: 1 }], vec![2, 2], false);
        let err = small.decode(&t).unwrap_err().to_string();
        assert!(
            err.contains("hold 24 bytes, a tile of this codec 16"),
            "{err}"
        );
        // Damaged compressed bytes: the filter says why, and which chunk.
        let mut bad = t.clone();
        let n = 8 + 12 + 16 + 2;
        bad[n..n + 4].fill(0xAB);
        let err = c.decode(&bad).unwrap_err().to_string();
        assert!(err.contains("chunk 0") && err.contains("ZSTD"), "{err}");
        // An empty buffer has no chunk count.
        assert!(c.decode(&[]).is_err());
    }

    #[test]
    fn a_column_major_tile_comes_out_row_major() {
        // A 3 x 2 tile: column-major cells (0,0) (1,0) (2,0) (0,1) (1,1) (2,1).
        let c = codec(vec![], vec![3, 2], true);
        let col = i32s([0, 10, 20, 1, 11, 21]);
        let t = tile(&[(24, &[], &col)]);
        assert_eq!(c.decode(&t).unwrap(), i32s([0, 1, 10, 11, 20, 21]));
        assert!(!c.is_row_major());
        assert!(codec(vec![], vec![1, 5], true).is_row_major());
        // Cells of several values move whole; three dimensions.
        let pairs: Vec<u8> = (0u8..24).collect();
        let shape = [2u64, 3, 2];
        let row = to_row_major(&pairs, &shape, 2);
        // Row-major (i, j, k) is column-major i + 2j + 6k.
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..2 {
                    let r = (i * 3 + j) * 2 + k;
                    let c = i + 2 * j + 6 * k;
                    assert_eq!(row[2 * r..2 * r + 2], pairs[2 * c..2 * c + 2]);
                }
            }
        }
    }

    #[test]
    fn decoded_chunks_come_in_the_envelope() {
        let c = codec(vec![Filter::Zstd { level: 1 }], vec![3, 2], true);
        let cells = i32s(0..6);
        let wrapped = [&ENVELOPE[..], &cells].concat();
        // As given: already a Zarr chunk, row-major.
        assert_eq!(c.decode(&wrapped).unwrap(), cells);
        let err = c.decode(&wrapped[..20]).unwrap_err().to_string();
        assert!(
            err.contains("a decoded chunk: 12 bytes, the chunk has 24"),
            "{err}"
        );
        // No tile starts so: its chunk count would need 2^67 bytes of headers.
        let count = u64::from_le_bytes(ENVELOPE);
        assert!(count.checked_mul(12).is_none());
    }
}
