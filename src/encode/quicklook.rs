//! A quick look (`values.png`): sampled cells of a 2-D attribute in, a colour-mapped PNG
//! out. Which cells are sampled, and how they were read, is the view's business; this
//! file decides only how a cell looks and what the file says about itself:
//!
//! - a value is coloured by viridis ([`super::colormap`]), linearly from the range's low
//!   (the darkest) to its high (the lightest): step `floor((v - lo) / (hi - lo) * 255 +
//!   0.5)` of the 256; a range of one value is the middle step, 128;
//! - +infinity is the high colour, -infinity the low; they do not widen the range;
//! - a fill value and NaN are transparent; a null is grey ([`NULL_GREY`]);
//! - the text chunks say the range (`fragfs:range`, `lo hi`, or `none`) and the colour
//!   map (`fragfs:colormap`), after the view's own (method, shape, source).

use super::colormap::{hex, VIRIDIS};
use super::png::{self, Png};

/// The colour of a null cell, opaque.
pub const NULL_GREY: [u8; 4] = [128, 128, 128, 255];

/// One sampled cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    /// A valid value (infinities included), as a float.
    Value(f64),
    /// The attribute's fill value (a cell no fragment wrote holds it).
    Fill,
    /// A null (validity 0).
    Null,
    /// A floating-point NaN.
    NotANumber,
}

/// The range the colours span: the lowest and highest finite values sampled, as floats
/// (for the colours) and as text in the attribute's own type (for the text chunk).
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub low: f64,
    pub high: f64,
    pub low_text: String,
    pub high_text: String,
}

/// What to draw.
pub struct Look<'a> {
    pub width: u32,
    pub height: u32,
    /// `width * height` cells, top row first.
    pub cells: &'a [Cell],
    /// `None` when no finite valid value was sampled.
    pub range: Option<Range>,
    /// The view's text chunks (keyword, text), written first.
    pub text: Vec<(String, String)>,
}

/// The table step of value `v` in `range` (see the module's doc).
pub fn step(v: f64, range: &Range) -> usize {
    if v == f64::INFINITY {
        return 255;
    }
    if v == f64::NEG_INFINITY {
        return 0;
    }
    let span = range.high - range.low;
    if span.is_nan() || span <= 0.0 {
        return 128;
    }
    let x = ((v - range.low) / span * 255.0 + 0.5).floor();
    x.clamp(0.0, 255.0) as usize
}

/// The RGBA colour of one cell.
pub fn colour(cell: Cell, range: Option<&Range>) -> [u8; 4] {
    match (cell, range) {
        (Cell::Fill | Cell::NotANumber, _) => [0, 0, 0, 0],
        (Cell::Null, _) => NULL_GREY,
        (Cell::Value(v), Some(r)) => {
            let [red, green, blue] = VIRIDIS[step(v, r)];
            [red, green, blue, 255]
        }
        // No finite value to span, yet a value: only infinities were sampled.
        (Cell::Value(v), None) => {
            let [red, green, blue] = VIRIDIS[if v > 0.0 { 255 } else { 0 }];
            [red, green, blue, 255]
        }
    }
}

/// The PNG file of `look`, or why it cannot be one.
pub fn encode(look: &Look<'_>) -> Result<Vec<u8>, String> {
    let n = (look.width as usize).saturating_mul(look.height as usize);
    if look.cells.len() != n {
        return Err(format!(
            "{} cells for {}x{} pixels",
            look.cells.len(),
            look.width,
            look.height
        ));
    }
    let mut rgba = Vec::with_capacity(n * 4);
    for &cell in look.cells {
        rgba.extend_from_slice(&colour(cell, look.range.as_ref()));
    }
    let mut text = look.text.clone();
    text.push((
        "fragfs:range".into(),
        match &look.range {
            Some(r) => format!("{} {}", r.low_text, r.high_text),
            None => "none".into(),
        },
    ));
    text.push((
        "fragfs:colormap".into(),
        format!(
            "viridis ({} low to {} high), linear over fragfs:range: step floor((v - low) / \
             (high - low) * 255 + 0.5) of 256 (one value: step 128); +inf the high colour, \
             -inf the low; fill values and NaN transparent; nulls grey {}",
            hex(VIRIDIS[0]),
            hex(VIRIDIS[255]),
            hex([NULL_GREY[0], NULL_GREY[1], NULL_GREY[2]])
        ),
    ));
    png::encode(&Png {
        width: look.width,
        height: look.height,
        rgba: &rgba,
        text: &text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(low: f64, high: f64) -> Range {
        Range {
            low,
            high,
            low_text: low.to_string(),
            high_text: high.to_string(),
        }
    }

    #[test]
    fn values_are_coloured_along_viridis() {
        let r = range(10.0, 20.0);
        assert_eq!(step(10.0, &r), 0);
        assert_eq!(step(20.0, &r), 255);
        assert_eq!(step(15.0, &r), 128);
        assert_eq!(step(f64::INFINITY, &r), 255);
        assert_eq!(step(f64::NEG_INFINITY, &r), 0);
        assert_eq!(step(3.0, &range(3.0, 3.0)), 128);
        assert_eq!(colour(Cell::Value(10.0), Some(&r)), [68, 1, 84, 255]);
        assert_eq!(colour(Cell::Fill, Some(&r)), [0, 0, 0, 0]);
        assert_eq!(colour(Cell::NotANumber, Some(&r)), [0, 0, 0, 0]);
        assert_eq!(colour(Cell::Null, Some(&r)), NULL_GREY);
    }

    #[test]
    fn encodes_with_the_range_and_colormap_in_text() {
        let cells = [Cell::Value(1.0), Cell::Fill, Cell::Null, Cell::Value(3.0)];
        let png = encode(&Look {
            width: 2,
            height: 2,
            cells: &cells,
            range: Some(Range {
                low: 1.0,
                high: 3.0,
                low_text: "1".into(),
                high_text: "4".into(),
            }),
            text: vec![("fragfs:shape".into(), "2x2".into())],
        })
        .unwrap();
        let text = String::from_utf8_lossy(&png);
        assert!(text.contains("fragfs:shape\u{0}2x2"));
        assert!(text.contains("fragfs:range\u{0}1 4"));
        assert!(text.contains("fragfs:colormap\0viridis (#440154 low to #fde725 high)"));
        assert!(encode(&Look {
            width: 3,
            height: 2,
            cells: &cells,
            range: None,
            text: vec![],
        })
        .is_err());
    }
}
