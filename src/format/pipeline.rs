//! Serialized filter pipelines (`03-array-schema.md` §5-6): what filters a tile went
//! through, with their options. Un-filtering lives in `crate::filter`.

use super::datatype::Datatype;
use super::error::Result;
use super::reader::Reader;

/// One filter of a pipeline with its decoded options.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    None,
    Gzip {
        level: i32,
    },
    Zstd {
        level: i32,
    },
    Lz4 {
        level: i32,
    },
    Rle {
        level: i32,
    },
    Bzip2 {
        level: i32,
    },
    /// `reinterpret`: the type the values are read as (absent before v20 or when ANY).
    DoubleDelta {
        reinterpret: Option<Datatype>,
    },
    BitWidthReduction {
        max_window: u32,
    },
    BitShuffle,
    ByteShuffle,
    PositiveDelta {
        max_window: u32,
    },
    /// AES-256-GCM, filter 11: appears in generic-tile headers of encrypted arrays and is
    /// appended by fragfs to data pipelines of encrypted arrays.
    Encryption,
    ChecksumMd5,
    ChecksumSha256,
    Dictionary {
        level: i32,
    },
    ScaleFloat {
        scale: f64,
        offset: f64,
        byte_width: u64,
    },
    Xor,
    Webp(WebpOptions),
    Delta {
        reinterpret: Option<Datatype>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebpOptions {
    pub quality: f32,
    pub input_format: u8,
    pub lossless: bool,
    pub y_extent: u16,
    pub x_extent: u16,
}

impl Filter {
    /// TileDB's filter type id.
    pub fn id(&self) -> u8 {
        match self {
            Filter::None => 0,
            Filter::Gzip { .. } => 1,
            Filter::Zstd { .. } => 2,
            Filter::Lz4 { .. } => 3,
            Filter::Rle { .. } => 4,
            Filter::Bzip2 { .. } => 5,
            Filter::DoubleDelta { .. } => 6,
            Filter::BitWidthReduction { .. } => 7,
            Filter::BitShuffle => 8,
            Filter::ByteShuffle => 9,
            Filter::PositiveDelta { .. } => 10,
            Filter::Encryption => 11,
            Filter::ChecksumMd5 => 12,
            Filter::ChecksumSha256 => 13,
            Filter::Dictionary { .. } => 14,
            Filter::ScaleFloat { .. } => 15,
            Filter::Xor => 16,
            Filter::Webp(_) => 18,
            Filter::Delta { .. } => 19,
        }
    }

    /// TileDB's name for the filter (`TILEDB_FILTER_<name>`).
    pub fn name(&self) -> &'static str {
        match self {
            Filter::None => "NONE",
            Filter::Gzip { .. } => "GZIP",
            Filter::Zstd { .. } => "ZSTD",
            Filter::Lz4 { .. } => "LZ4",
            Filter::Rle { .. } => "RLE",
            Filter::Bzip2 { .. } => "BZIP2",
            Filter::DoubleDelta { .. } => "DOUBLE_DELTA",
            Filter::BitWidthReduction { .. } => "BIT_WIDTH_REDUCTION",
            Filter::BitShuffle => "BITSHUFFLE",
            Filter::ByteShuffle => "BYTESHUFFLE",
            Filter::PositiveDelta { .. } => "POSITIVE_DELTA",
            Filter::Encryption => "AES_256_GCM",
            Filter::ChecksumMd5 => "CHECKSUM_MD5",
            Filter::ChecksumSha256 => "CHECKSUM_SHA256",
            Filter::Dictionary { .. } => "DICTIONARY",
            Filter::ScaleFloat { .. } => "SCALE_FLOAT",
            Filter::Xor => "XOR",
            Filter::Webp(_) => "WEBP",
            Filter::Delta { .. } => "DELTA",
        }
    }

    /// The datatype later filters see, given this filter's input type
    /// (`03-array-schema.md` §5: SCALE_FLOAT, XOR, DELTA/DOUBLE_DELTA change it).
    pub fn output_type(&self, input: Datatype) -> Datatype {
        match self {
            Filter::ScaleFloat { byte_width, .. } => {
                Datatype::signed_of_width(*byte_width).unwrap_or(input)
            }
            Filter::Xor => Datatype::signed_of_width(input.size()).unwrap_or(input),
            Filter::Delta {
                reinterpret: Some(t),
            }
            | Filter::DoubleDelta {
                reinterpret: Some(t),
            } => *t,
            Filter::Encryption => Datatype::Blob,
            _ => input,
        }
    }

    /// The filter's options as stored: the inverse of what [`Filter::parse`] reads.
    /// Compressors write TileDB's compressor byte (its filter id, which the reader
    /// skips) and the level; a reinterpret type follows when there is one.
    fn options(&self) -> Vec<u8> {
        let level = |id: u8, level: i32| {
            let mut o = vec![id];
            o.extend(level.to_le_bytes());
            o
        };
        let reinterpret = |id: u8, t: &Option<Datatype>| {
            let mut o = level(id, 0);
            if let Some(t) = t {
                o.push(t.id());
            }
            o
        };
        match self {
            Filter::Gzip { level: l }
            | Filter::Zstd { level: l }
            | Filter::Lz4 { level: l }
            | Filter::Rle { level: l }
            | Filter::Bzip2 { level: l }
            | Filter::Dictionary { level: l } => level(self.id(), *l),
            Filter::DoubleDelta { reinterpret: t } | Filter::Delta { reinterpret: t } => {
                reinterpret(self.id(), t)
            }
            Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
                max_window.to_le_bytes().to_vec()
            }
            Filter::ScaleFloat {
                scale,
                offset,
                byte_width,
            } => [
                scale.to_le_bytes(),
                offset.to_le_bytes(),
                byte_width.to_le_bytes(),
            ]
            .concat(),
            Filter::Webp(w) => {
                let mut o = w.quality.to_le_bytes().to_vec();
                o.push(w.input_format);
                o.push(u8::from(w.lossless));
                o.extend(w.y_extent.to_le_bytes());
                o.extend(w.x_extent.to_le_bytes());
                o
            }
            Filter::None
            | Filter::BitShuffle
            | Filter::ByteShuffle
            | Filter::Encryption
            | Filter::ChecksumMd5
            | Filter::ChecksumSha256
            | Filter::Xor => Vec::new(),
        }
    }

    fn parse(r: &mut Reader) -> Result<Filter> {
        let type_offset = r.offset();
        let id = r.u8("filter type")?;
        let options_len = r.u32("filter options length")?;
        let options = r.bytes(options_len as u64, "filter options")?;
        let mut o = Reader::new(options);
        // Compression-type filters: compressor byte then level; the byte is redundant.
        let level = |o: &mut Reader| -> Result<i32> {
            if o.remaining() >= 5 {
                o.u8("compressor")?;
                o.i32("compression level")
            } else {
                Ok(0)
            }
        };
        let reinterpret = |o: &mut Reader| -> Result<Option<Datatype>> {
            level(o)?;
            if o.is_empty() {
                return Ok(None);
            }
            let at = o.offset();
            let t = Datatype::parse(o.u8("reinterpret datatype")?, "reinterpret datatype", at)?;
            Ok((t != Datatype::Any).then_some(t))
        };
        Ok(match id {
            0 => Filter::None,
            1 => Filter::Gzip {
                level: level(&mut o)?,
            },
            2 => Filter::Zstd {
                level: level(&mut o)?,
            },
            3 => Filter::Lz4 {
                level: level(&mut o)?,
            },
            4 => Filter::Rle {
                level: level(&mut o)?,
            },
            5 => Filter::Bzip2 {
                level: level(&mut o)?,
            },
            6 => Filter::DoubleDelta {
                reinterpret: reinterpret(&mut o)?,
            },
            7 => Filter::BitWidthReduction {
                max_window: o.u32("bit width max window")?,
            },
            8 => Filter::BitShuffle,
            9 => Filter::ByteShuffle,
            10 => Filter::PositiveDelta {
                max_window: o.u32("positive delta max window")?,
            },
            11 => Filter::Encryption,
            12 => Filter::ChecksumMd5,
            13 => Filter::ChecksumSha256,
            14 => Filter::Dictionary {
                level: level(&mut o)?,
            },
            15 => Filter::ScaleFloat {
                scale: o.f64("scale float scale")?,
                offset: o.f64("scale float offset")?,
                byte_width: o.u64("scale float byte width")?,
            },
            16 => Filter::Xor,
            18 => Filter::Webp(WebpOptions {
                quality: o.f32("webp quality")?,
                input_format: o.u8("webp input format")?,
                lossless: o.bool("webp lossless")?,
                y_extent: o.u16("webp y extent")?,
                x_extent: o.u16("webp x extent")?,
            }),
            19 => Filter::Delta {
                reinterpret: reinterpret(&mut o)?,
            },
            other => {
                return Err(super::FormatError::Invalid {
                    field: "filter type",
                    offset: type_offset,
                    reason: format!("unknown filter id {other}"),
                })
            }
        })
    }
}

/// A filter pipeline as stored in a schema or a generic-tile header.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FilterPipeline {
    /// Informational only: chunk sizes are read from chunk headers.
    pub max_chunk_size: u32,
    pub filters: Vec<Filter>,
}

impl FilterPipeline {
    pub fn parse(r: &mut Reader) -> Result<FilterPipeline> {
        let max_chunk_size = r.u32("pipeline max chunk size")?;
        let at = r.offset();
        let count = r.u32("pipeline filter count")?;
        // Each filter takes at least 5 bytes; bound the count by what is there.
        r.check_count(count as u64, 5, "pipeline filter count", at)?;
        let filters = (0..count)
            .map(|_| Filter::parse(r))
            .collect::<Result<Vec<_>>>()?;
        Ok(FilterPipeline {
            max_chunk_size,
            filters,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The pipeline as a schema stores it (`03-array-schema.md` §5-6): what
    /// [`FilterPipeline::parse`] reads back to an equal pipeline. A description of a tile
    /// that must rebuild its pipeline exactly (the tile codec's configuration) carries
    /// these bytes rather than a second spelling of every filter's options.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.max_chunk_size.to_le_bytes().to_vec();
        out.extend((self.filters.len() as u32).to_le_bytes());
        for f in &self.filters {
            let options = f.options();
            out.push(f.id());
            out.extend((options.len() as u32).to_le_bytes());
            out.extend(options);
        }
        out
    }

    /// The same pipeline with AES-256-GCM appended, as TileDB applies it to every data
    /// tile of an encrypted array.
    pub fn with_encryption(&self) -> FilterPipeline {
        let mut p = self.clone();
        if p.filters.last() != Some(&Filter::Encryption) {
            p.filters.push(Filter::Encryption);
        }
        p
    }

    /// The input datatype of each filter, given the field's datatype.
    pub fn input_types(&self, field_type: Datatype) -> Vec<Datatype> {
        let mut t = field_type;
        self.filters
            .iter()
            .map(|f| {
                let input = t;
                t = f.output_type(t);
                input
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_zstd_pipeline_of_the_spec_example() {
        let bytes = [
            0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x05, 0x00, 0x00, 0x00, 0x02,
            0xff, 0xff, 0xff, 0xff,
        ];
        let p = FilterPipeline::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(p.max_chunk_size, 65536);
        assert_eq!(p.filters, vec![Filter::Zstd { level: -1 }]);
    }

    /// Every filter, with options that are not the defaults, reads back as it was
    /// written; and the spec's example pipeline writes back to its own bytes.
    #[test]
    fn pipelines_round_trip_through_their_bytes() {
        let every = FilterPipeline {
            max_chunk_size: 12345,
            filters: vec![
                Filter::None,
                Filter::Gzip { level: 9 },
                Filter::Zstd { level: -3 },
                Filter::Lz4 { level: 2 },
                Filter::Rle { level: 1 },
                Filter::Bzip2 { level: 7 },
                Filter::DoubleDelta { reinterpret: None },
                Filter::DoubleDelta {
                    reinterpret: Some(Datatype::Int64),
                },
                Filter::BitWidthReduction { max_window: 77 },
                Filter::BitShuffle,
                Filter::ByteShuffle,
                Filter::PositiveDelta { max_window: 99 },
                Filter::Encryption,
                Filter::ChecksumMd5,
                Filter::ChecksumSha256,
                Filter::Dictionary { level: 4 },
                Filter::ScaleFloat {
                    scale: 0.25,
                    offset: -7.5,
                    byte_width: 2,
                },
                Filter::Xor,
                Filter::Webp(WebpOptions {
                    quality: 80.5,
                    input_format: 2,
                    lossless: true,
                    y_extent: 3,
                    x_extent: 9,
                }),
                Filter::Delta { reinterpret: None },
                Filter::Delta {
                    reinterpret: Some(Datatype::UInt16),
                },
            ],
        };
        let bytes = every.to_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(FilterPipeline::parse(&mut r).unwrap(), every);
        assert!(r.is_empty(), "every byte read back");
        let spec = [
            0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x05, 0x00, 0x00, 0x00, 0x02,
            0xff, 0xff, 0xff, 0xff,
        ];
        let p = FilterPipeline::parse(&mut Reader::new(&spec)).unwrap();
        assert_eq!(p.to_bytes(), spec);
        assert_eq!(FilterPipeline::default().to_bytes(), [0; 8]);
    }

    #[test]
    fn unknown_filter_id_is_named() {
        let bytes = [0, 0, 1, 0, 1, 0, 0, 0, 42, 0, 0, 0, 0];
        let err = FilterPipeline::parse(&mut Reader::new(&bytes)).unwrap_err();
        assert!(err.to_string().contains("unknown filter id 42"), "{err}");
    }

    #[test]
    fn scale_float_and_xor_change_the_type_seen_downstream() {
        let p = FilterPipeline {
            max_chunk_size: 0,
            filters: vec![
                Filter::ScaleFloat {
                    scale: 1.0,
                    offset: 0.0,
                    byte_width: 2,
                },
                Filter::Xor,
                Filter::Zstd { level: 1 },
            ],
        };
        assert_eq!(
            p.input_types(Datatype::Float64),
            vec![Datatype::Float64, Datatype::Int16, Datatype::Int16]
        );
    }
}
