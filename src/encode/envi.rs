//! ENVI headers (`.hdr`): the text that lets GDAL and other raster tools open a file of
//! raw little-endian values as a raster, band after band (BSQ), with no header of its
//! own. A raster description in, the header text out.

use serde_json::Value;

use crate::encode::value;
use crate::format::Datatype;

/// A raster of raw values: what its header says.
#[derive(Debug, Clone)]
pub struct Raster<'a> {
    /// Bands (1 for a 2-D raster), lines, samples.
    pub bands: u64,
    pub lines: u64,
    pub samples: u64,
    pub datatype: Datatype,
    /// One element: the value that marks a pixel as not there.
    pub ignore: &'a [u8],
    /// The header's description.
    pub description: String,
    /// One name per band.
    pub band_names: Vec<String>,
    /// The map coordinates of the first pixel: its sample (x) and line (y).
    pub origin: (i128, i128),
}

/// The ENVI data type code of a datatype GDAL 3.6's ENVI driver reads (no INT8 there:
/// it has no signed byte).
pub fn envi_type(t: Datatype) -> Option<u8> {
    use Datatype::*;
    Some(match t {
        UInt8 => 1,
        Int16 => 2,
        Int32 => 3,
        Float32 => 4,
        Float64 => 5,
        UInt16 => 12,
        UInt32 => 13,
        Int64 => 14,
        UInt64 => 15,
        _ => return None,
    })
}

/// The header of `r`, or `None` for a datatype ENVI has no code for.
pub fn header(r: &Raster<'_>) -> Option<String> {
    let code = envi_type(r.datatype)?;
    let fill = match value::element(r.ignore, r.datatype) {
        Value::String(s) => s.to_lowercase(),
        other => other.to_string(),
    };
    Some(format!(
        "ENVI\n\
         description = {{{}}}\n\
         samples = {}\n\
         lines = {}\n\
         bands = {}\n\
         header offset = 0\n\
         file type = ENVI Standard\n\
         data type = {code}\n\
         interleave = bsq\n\
         byte order = 0\n\
         data ignore value = {fill}\n\
         band names = {{{}}}\n\
         map info = {{Arbitrary, 1, 1, {}, {}, 1, 1, 0}}\n",
        r.description,
        r.samples,
        r.lines,
        r.bands,
        r.band_names.join(", "),
        r.origin.0,
        r.origin.1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_names_the_shape_type_and_nodata() {
        let nan = f32::NAN.to_le_bytes();
        let r = Raster {
            bands: 2,
            lines: 3,
            samples: 4,
            datatype: Datatype::Float32,
            ignore: &nan,
            description: "fragfs: a at latest".into(),
            band_names: vec!["b=1".into(), "b=2".into()],
            origin: (10, -5),
        };
        let h = header(&r).unwrap();
        assert!(
            h.starts_with("ENVI\ndescription = {fragfs: a at latest}\n"),
            "{h}"
        );
        for line in [
            "samples = 4\n",
            "lines = 3\n",
            "bands = 2\n",
            "data type = 4\n",
            "data ignore value = nan\n",
            "band names = {b=1, b=2}\n",
            "map info = {Arbitrary, 1, 1, 10, -5, 1, 1, 0}\n",
        ] {
            assert!(h.contains(line), "{line} in {h}");
        }
        let int8 = Raster {
            datatype: Datatype::Int8,
            ..r
        };
        assert!(
            header(&int8).is_none(),
            "GDAL's ENVI driver has no signed byte"
        );
    }
}
