//! The generic tile header (`04-generic-tile.md`): the self-describing container of
//! schemas, fragment-metadata pieces, `.meta` and `.del` files.

use super::error::{FormatError, Result, NEWEST_FORMAT_VERSION};
use super::pipeline::FilterPipeline;
use super::reader::Reader;

/// Fixed part of the header before the pipeline.
pub const BASE_HEADER_LEN: u64 = 34;

/// Header of the tiles TileDB 1.3 and older wrote ("format 0", `08-format-history.md`):
/// `u64` persisted size, `u64` tile size, `u8` datatype, `u64` cell size, `u8`
/// compressor, `i32` level. It has no version field.
const PRE_VERSION_1_HEADER_LEN: u64 = 30;

/// True when a whole file (a schema, a fragment's metadata) is one tile of TileDB 1.3
/// or older: it starts with the persisted size instead of a version, and that size plus
/// the old header is exactly the file. Only consulted when the first `u32` is not a
/// known version, so a format 1+ file is never taken for an older one.
pub fn is_pre_version_1_file(file: &[u8]) -> bool {
    let mut r = Reader::new(file);
    r.u64("persisted size").is_ok_and(|persisted| {
        persisted.checked_add(PRE_VERSION_1_HEADER_LEN) == Some(file.len() as u64)
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct GenericTileHeader {
    pub version: u32,
    /// Bytes of filtered (chunked) data after the header.
    pub persisted_size: u64,
    /// Bytes of the unfiltered payload.
    pub tile_size: u64,
    pub datatype: u8,
    pub cell_size: u64,
    /// 0 none, 1 AES-256-GCM.
    pub encryption_type: u8,
    pub pipeline: FilterPipeline,
    /// Header bytes including the pipeline: the chunked data starts here.
    pub header_len: u64,
}

impl GenericTileHeader {
    /// Parses the header at the start of `bytes` (which may extend past the tile; a
    /// whole file is needed to recognise the pre-version-1 layout).
    pub fn parse(bytes: &[u8]) -> Result<GenericTileHeader> {
        let mut r = Reader::new(bytes);
        let version = r.u32("generic tile version")?;
        if version == 0 || version > NEWEST_FORMAT_VERSION {
            if is_pre_version_1_file(bytes) {
                return Err(FormatError::PreVersion1);
            }
            return Err(FormatError::UnsupportedVersion {
                what: "generic tile",
                found: version,
            });
        }
        let persisted_size = r.u64("generic tile persisted size")?;
        let tile_size = r.u64("generic tile size")?;
        let datatype = r.u8("generic tile datatype")?;
        let cell_size = r.u64("generic tile cell size")?;
        let encryption_type = r.u8("generic tile encryption type")?;
        let pipeline_len = r.u32("generic tile pipeline size")?;
        let pipeline_bytes = r.bytes(pipeline_len as u64, "generic tile pipeline")?;
        let pipeline = FilterPipeline::parse(&mut Reader::new(pipeline_bytes))?;
        if encryption_type > 1 {
            return Err(FormatError::Invalid {
                field: "generic tile encryption type",
                offset: 29,
                reason: format!("unknown encryption type {encryption_type}"),
            });
        }
        Ok(GenericTileHeader {
            version,
            persisted_size,
            tile_size,
            datatype,
            cell_size,
            encryption_type,
            pipeline,
            header_len: BASE_HEADER_LEN + pipeline_len as u64,
        })
    }

    /// Offset just past this tile, relative to where its header starts.
    pub fn end(&self) -> u64 {
        self.header_len.saturating_add(self.persisted_size)
    }
}
