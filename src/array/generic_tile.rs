//! Decoding generic tiles (schemas, fragment-metadata pieces, `.meta`, `.del`) through the
//! filter pipeline stored in their header.

use crate::error::{Error, Result};
use crate::filter::{unfilter_chunk, ChunkContext};
use crate::format::chunked::parse_chunks;
use crate::format::generic_tile::{GenericTileHeader, BASE_HEADER_LEN};
use crate::format::{Datatype, Reader};

use super::storage::DataFile;

/// Un-filters a generic tile held in memory (`bytes` starts at its header). `what` names
/// it in errors. Returns the header and the payload.
pub fn decode_generic_tile(
    bytes: &[u8],
    key: Option<[u8; 32]>,
    what: &str,
) -> Result<(GenericTileHeader, Vec<u8>)> {
    let header = GenericTileHeader::parse(bytes).map_err(|e| Error::format(what, e))?;
    if header.encryption_type == 1 && key.is_none() {
        return Err(Error::KeyNeeded);
    }
    let data = Reader::new(bytes)
        .bytes(header.header_len, "generic tile header")
        .and_then(|_| {
            let mut r = Reader::new(&bytes[header.header_len as usize..]);
            r.bytes(header.persisted_size, "generic tile data")
        })
        .map_err(|e| Error::format(what, e))?;
    let chunks = parse_chunks(data).map_err(|e| Error::format(what, e))?;
    let ctx = ChunkContext {
        field_type: Datatype::from_u8(header.datatype).unwrap_or(Datatype::Char),
        cell_size: header.cell_size,
        format_version: header.version,
        key,
    };
    let mut payload = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let md = &data[chunk.metadata_range().start as usize..chunk.metadata_range().end as usize];
        let filtered = &data[chunk.data_range().start as usize..chunk.data_range().end as usize];
        let out = unfilter_chunk(&header.pipeline, &ctx, md, filtered, chunk.unfiltered_len)
            .map_err(|e| Error::filter(format!("{what}, chunk {i}"), e))?;
        payload.extend_from_slice(&out);
    }
    if payload.len() as u64 != header.tile_size {
        return Err(Error::corrupt(
            what,
            format!(
                "generic tile decodes to {} bytes, header says {}",
                payload.len(),
                header.tile_size
            ),
        ));
    }
    Ok((header, payload))
}

/// Reads and decodes the generic tile that starts at `offset` in `file`.
pub fn read_generic_tile(
    file: &DataFile,
    offset: u64,
    key: Option<[u8; 32]>,
    what: &str,
) -> Result<Vec<u8>> {
    let base_len = BASE_HEADER_LEN.min(file.len().saturating_sub(offset));
    let base = file.read(offset, base_len)?;
    let mut r = Reader::new(&base);
    let sizes = (|| {
        r.u32("generic tile version")?;
        let persisted = r.u64("generic tile persisted size")?;
        // tile size (8), datatype (1), cell size (8), encryption type (1)
        r.bytes(18, "generic tile header")?;
        let pipeline = r.u32("generic tile pipeline size")?;
        Ok::<_, crate::format::FormatError>((persisted, pipeline))
    })();
    let (persisted, pipeline) = sizes.map_err(|e| Error::format(what, e))?;
    // Saturating: a corrupt persisted size of 0xFFFF.. must be refused, not overflow.
    let total = (BASE_HEADER_LEN + pipeline as u64).saturating_add(persisted);
    if offset.saturating_add(total) > file.len() {
        return Err(Error::corrupt(
            what,
            format!(
                "generic tile at byte {offset} claims {total} bytes, the file has {}",
                file.len()
            ),
        ));
    }
    let bytes = file.read(offset, total)?;
    Ok(decode_generic_tile(&bytes, key, what)?.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_persisted_size_is_refused() {
        let mut bytes = 22u32.to_le_bytes().to_vec();
        bytes.extend(u64::MAX.to_le_bytes()); // persisted size
        bytes.extend([0; 18]);
        bytes.extend(0u32.to_le_bytes()); // pipeline size
        bytes.extend([0; 16]);
        let tmp = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tmp.path(), &bytes).unwrap();
        let file = DataFile::open(tmp.path()).unwrap();
        let err = read_generic_tile(&file, 0, None, "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("claims"), "{err}");
    }
}
