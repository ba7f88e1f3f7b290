//! FiloDB's optional chunk compression (FORMAT.md §9.2): a blob whose first byte is 0xFF
//! is `u32 big-endian uncompressed length` + one raw LZ4 block (lz4-java's block format,
//! no frame header). 0xFF is never a valid major type, so the test is unambiguous.

use std::borrow::Cow;

use super::error::Result;
use super::span::Span;

/// First byte of a framed blob.
pub const LZ4_MARKER: u8 = 0xFF;

/// The Filo chunk inside `blob`: the blob itself, or its decompressed LZ4 block. The
/// stated length is checked against `max_bytes` before anything is allocated, and the
/// block must decompress to exactly that length.
pub fn unframe(blob: &[u8], max_bytes: u64) -> Result<Cow<'_, [u8]>> {
    if blob.first() != Some(&LZ4_MARKER) {
        return Ok(Cow::Borrowed(blob));
    }
    let span = Span::chunk(blob, "LZ4 framing");
    let len = u32::from_be_bytes(span.array("uncompressed length (big-endian)", 1)?);
    if u64::from(len) > max_bytes {
        return Err(span.invalid(
            "uncompressed length (big-endian)",
            1,
            format!("{len} bytes, over the limit of {max_bytes}"),
        ));
    }
    let block = span.tail("LZ4 block", 5)?;
    let chunk = lz4_flex::block::decompress(block.bytes(), len as usize)
        .map_err(|e| span.invalid("LZ4 block", 5, e.to_string()))?;
    if chunk.len() != len as usize {
        return Err(span.invalid(
            "LZ4 block",
            5,
            format!(
                "decompresses to {} bytes, the frame says {len}",
                chunk.len()
            ),
        ));
    }
    Ok(Cow::Owned(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(chunk: &[u8]) -> Vec<u8> {
        let mut b = vec![LZ4_MARKER];
        b.extend((chunk.len() as u32).to_be_bytes());
        b.extend(lz4_flex::block::compress(chunk));
        b
    }

    #[test]
    fn unframes_and_passes_plain_chunks_through() {
        let chunk: Vec<u8> = [6u8, 8, 0, 0, 8, 0, 1, 0]
            .iter()
            .copied()
            .chain([7u8; 300])
            .collect();
        assert!(matches!(
            unframe(&chunk, 1 << 20).unwrap(),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            unframe(&frame(&chunk), 1 << 20).unwrap().as_ref(),
            &chunk[..]
        );
    }

    #[test]
    fn bad_frames_are_errors() {
        let chunk = vec![1u8; 100];
        let good = frame(&chunk);
        assert!(unframe(&good, 99).is_err()); // over the budget
        let mut longer = good.clone();
        longer[1..5].copy_from_slice(&200u32.to_be_bytes());
        assert!(unframe(&longer, 1 << 20).is_err());
        let mut shorter = good.clone();
        shorter[1..5].copy_from_slice(&50u32.to_be_bytes());
        assert!(unframe(&shorter, 1 << 20).is_err());
        for cut in 0..good.len() {
            let _ = unframe(&good[..cut], 1 << 20); // no panic
        }
        let err = unframe(&[0xFF, 0, 0], 1 << 20).unwrap_err().to_string();
        assert!(err.starts_with("LZ4 framing: uncompressed length"), "{err}");
    }
}
