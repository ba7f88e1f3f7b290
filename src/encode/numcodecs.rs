//! The standard numcodecs codecs a Zarr v2 array of references can name, so that readers
//! without fragfs read its chunks: `zstd`, `zlib` and `shuffle` as numcodecs spells their
//! configurations in `.zarray`, and the same encodings of a chunk given inline (a chunk
//! no stored tile holds must decode through the array's codecs like the others).

use std::io::Write;

use serde_json::{json, Value};

/// A numcodecs compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compressor {
    /// `null`: the chunk is the values.
    None,
    /// `{"id": "zstd"}`: one zstd frame.
    Zstd,
    /// `{"id": "zlib"}`: one zlib stream (RFC 1950).
    Zlib,
}

/// A Zarr v2 array's codecs: an optional byte shuffle (the `shuffle` filter, of
/// `elementsize` bytes), then a compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StandardCodecs {
    pub shuffle: Option<u64>,
    pub compressor: Compressor,
}

impl StandardCodecs {
    /// `.zarray`'s `compressor`.
    pub fn compressor_json(&self) -> Value {
        match self.compressor {
            Compressor::None => Value::Null,
            Compressor::Zstd => json!({ "id": "zstd" }),
            Compressor::Zlib => json!({ "id": "zlib" }),
        }
    }

    /// `.zarray`'s `filters`.
    pub fn filters_json(&self) -> Value {
        match self.shuffle {
            None => Value::Null,
            Some(n) => json!([{ "id": "shuffle", "elementsize": n }]),
        }
    }

    /// A chunk's values encoded as these codecs decode them: shuffled, then compressed.
    pub fn encode(&self, values: &[u8]) -> std::io::Result<Vec<u8>> {
        let shuffled;
        let bytes = match self.shuffle {
            Some(n) if n > 1 => {
                shuffled = shuffle(values, n as usize);
                &shuffled[..]
            }
            _ => values,
        };
        match self.compressor {
            Compressor::None => Ok(bytes.to_vec()),
            Compressor::Zstd => zstd::bulk::compress(bytes, 3),
            Compressor::Zlib => {
                let mut z =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
                z.write_all(bytes)?;
                z.finish()
            }
        }
    }
}

/// numcodecs' `Shuffle` (and blosc's, and TileDB's BYTESHUFFLE): byte j of element i
/// goes to `j * n + i`; a tail shorter than an element stays in place.
fn shuffle(values: &[u8], size: usize) -> Vec<u8> {
    let n = values.len() / size;
    let mut out = values.to_vec();
    for i in 0..n {
        for j in 0..size {
            out[j * n + i] = values[i * size + j];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn configurations_as_numcodecs_spells_them() {
        let c = StandardCodecs {
            shuffle: Some(2),
            compressor: Compressor::Zstd,
        };
        assert_eq!(c.compressor_json(), json!({ "id": "zstd" }));
        assert_eq!(
            c.filters_json(),
            json!([{ "id": "shuffle", "elementsize": 2 }])
        );
        let z = StandardCodecs {
            shuffle: None,
            compressor: Compressor::Zlib,
        };
        assert_eq!(z.compressor_json(), json!({ "id": "zlib" }));
        assert_eq!(z.filters_json(), Value::Null);
    }

    #[test]
    fn encodings_decode_back() {
        let values: Vec<u8> = (0u16..300).flat_map(|v| (v * 7).to_le_bytes()).collect();
        let c = StandardCodecs {
            shuffle: Some(2),
            compressor: Compressor::Zstd,
        };
        let packed = c.encode(&values).unwrap();
        let shuffled = zstd::bulk::decompress(&packed, values.len()).unwrap();
        assert_eq!(
            shuffled[..300],
            values.iter().step_by(2).copied().collect::<Vec<_>>()[..]
        );
        let z = StandardCodecs {
            shuffle: None,
            compressor: Compressor::Zlib,
        };
        let mut back = Vec::new();
        flate2::read::ZlibDecoder::new(&z.encode(&values).unwrap()[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, values);
        let raw = StandardCodecs {
            shuffle: None,
            compressor: Compressor::None,
        };
        assert_eq!(raw.encode(&values).unwrap(), values);
    }

    /// TileDB's BYTESHUFFLE and this shuffle (numcodecs') are one layout: the filter's
    /// own test vector (`filter/byteshuffle.rs`), with its 2-byte tail left in place.
    #[test]
    fn the_shuffle_is_tiledb_s_byteshuffle() {
        let original: Vec<u8> = (0u8..14).collect();
        assert_eq!(
            shuffle(&original, 4),
            [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 13]
        );
    }
}
