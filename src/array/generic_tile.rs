//! Decoding generic tiles (schemas, fragment-metadata pieces, `.meta`, `.del`) through the
//! filter pipeline stored in their header.

use crate::error::{Error, Place, Result};
use crate::filter::{unfilter_chunk, ChunkContext};
use crate::format::chunked::parse_chunks;
use crate::format::generic_tile::{GenericTileHeader, BASE_HEADER_LEN};
use crate::format::{Datatype, Reader};
use crate::storage::Store;

/// Bytes read past a generic tile's base header in the first request: the header's
/// filter pipeline and, for the small tiles of fragment metadata, the whole tile, so
/// most tiles cost one request.
const FIRST_READ: u64 = 4096;

/// Un-filters a generic tile held in memory (`bytes` starts at its header). `place`
/// names it in errors. Returns the header and the payload.
pub fn decode_generic_tile(
    bytes: &[u8],
    key: Option<[u8; 32]>,
    place: &Place,
) -> Result<(GenericTileHeader, Vec<u8>)> {
    let header = GenericTileHeader::parse(bytes).map_err(|e| Error::format(place.clone(), e))?;
    if header.encryption_type == 1 && key.is_none() {
        return Err(Error::KeyNeeded(None));
    }
    let data = Reader::new(bytes)
        .bytes(header.header_len, "generic tile header")
        .and_then(|_| {
            let mut r = Reader::new(&bytes[header.header_len as usize..]);
            r.bytes(header.persisted_size, "generic tile data")
        })
        .map_err(|e| Error::format(place.clone(), e))?;
    let chunks = parse_chunks(data).map_err(|e| Error::format(place.clone(), e))?;
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
            .map_err(|e| Error::filter(place.clone().chunk(i), e))?;
        payload.extend_from_slice(&out);
    }
    if payload.len() as u64 != header.tile_size {
        return Err(Error::corrupt(
            place.clone(),
            format!(
                "generic tile decodes to {} bytes, header says {}",
                payload.len(),
                header.tile_size
            ),
        ));
    }
    Ok((header, payload))
}

/// Reads and decodes the generic tile that starts at `offset` of object `file` (of
/// `file_len` bytes): one request for a small tile, two for a large one.
pub fn read_generic_tile(
    store: &dyn Store,
    file: &str,
    file_len: u64,
    offset: u64,
    key: Option<[u8; 32]>,
    place: &Place,
) -> Result<Vec<u8>> {
    let first = (BASE_HEADER_LEN + FIRST_READ).min(file_len.saturating_sub(offset));
    let mut bytes = store
        .read_range(file, offset, first)
        .map_err(|e| e.at(place.clone()))?;
    let mut r = Reader::new(&bytes);
    let sizes = (|| {
        r.u32("generic tile version")?;
        let persisted = r.u64("generic tile persisted size")?;
        // tile size (8), datatype (1), cell size (8), encryption type (1)
        r.bytes(18, "generic tile header")?;
        let pipeline = r.u32("generic tile pipeline size")?;
        Ok::<_, crate::format::FormatError>((persisted, pipeline))
    })();
    let (persisted, pipeline) = sizes.map_err(|e| Error::format(place.clone(), e))?;
    // Saturating: a corrupt persisted size of 0xFFFF.. must be refused, not overflow.
    let total = (BASE_HEADER_LEN + pipeline as u64).saturating_add(persisted);
    if offset.saturating_add(total) > file_len {
        return Err(Error::corrupt(
            place.clone(),
            format!("generic tile at byte {offset} claims {total} bytes, the file has {file_len}"),
        ));
    }
    let have = bytes.len() as u64;
    if total > have {
        store
            .read_into(file, offset + have, total - have, &mut bytes)
            .map_err(|e| e.at(place.clone()))?;
    }
    bytes.truncate(total as usize);
    Ok(decode_generic_tile(&bytes, key, place)?.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStore;

    #[test]
    fn huge_persisted_size_is_refused() {
        let mut bytes = 22u32.to_le_bytes().to_vec();
        bytes.extend(u64::MAX.to_le_bytes()); // persisted size
        bytes.extend([0; 18]);
        bytes.extend(0u32.to_le_bytes()); // pipeline size
        bytes.extend([0; 16]);
        let store = MemoryStore::new("t");
        let len = bytes.len() as u64;
        store.put("f", bytes);
        let err = read_generic_tile(&store, "f", len, 0, None, &Place::file("f"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("claims"), "{err}");
    }
}
