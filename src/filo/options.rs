//! What decoding is told from outside the chunk: the writer's version and a byte budget.

/// Which writer produced the chunks (the manifest's `format_version`, FORMAT.md §9.3).
///
/// It matters in one place only: UTF8Vector's short string words, which changed in
/// v0.3.2 and cannot be told apart from the bytes (FORMAT.md §6.6, §11 item 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FormatVersion {
    /// `velvia-filo-0.3`: v0.3.2 and later (the default).
    #[default]
    Filo03,
    /// `velvia-filo-0.3.0`: v0.3.0–0.3.1, the old UTF8Vector small form.
    Filo030,
}

impl FormatVersion {
    pub fn name(self) -> &'static str {
        match self {
            FormatVersion::Filo03 => "velvia-filo-0.3",
            FormatVersion::Filo030 => "velvia-filo-0.3.0",
        }
    }

    pub fn from_name(name: &str) -> Option<FormatVersion> {
        [FormatVersion::Filo03, FormatVersion::Filo030]
            .into_iter()
            .find(|v| v.name() == name)
    }
}

/// Default output budget of [`decode_vector`]: 256 MiB, enough for the largest
/// EmptyVector (2²⁴ − 1 rows of 8 bytes plus validity) and far above real chunks.
pub const DEFAULT_MAX_DECODED_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    pub version: FormatVersion,
    /// Most bytes decoding may produce (values + offsets + validity + zones), and the
    /// most an LZ4-framed blob may decompress to.
    pub max_decoded_bytes: u64,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            version: FormatVersion::default(),
            max_decoded_bytes: DEFAULT_MAX_DECODED_BYTES,
        }
    }
}
