//! A kerchunk reference set, version 1 (fsspec's `ReferenceFileSystem`, `reference://`):
//! `{"version": 1, "refs": {key: value}}`, where a value is the file's text (metadata),
//! its bytes in base64 (`"base64:..."`), a whole file elsewhere (`[url]`) or a byte range
//! of one (`[url, offset, length]`). Keys are sorted and numbers written as they are, so
//! the same store gives the same bytes every time.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::value::base64;

/// One key's reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A metadata document, as text.
    Text(String),
    /// Bytes held in the set itself.
    Inline(Vec<u8>),
    /// `length` bytes of the object `url` from `offset`.
    Range { url: String, offset: u64, len: u64 },
    /// The whole object `url`.
    Whole(String),
}

impl Reference {
    fn to_json(&self) -> Value {
        match self {
            Reference::Text(text) => json!(text),
            Reference::Inline(bytes) => json!(format!("base64:{}", base64(bytes))),
            Reference::Range { url, offset, len } => json!([url, offset, len]),
            Reference::Whole(url) => json!([url]),
        }
    }
}

/// The reference set's JSON, keys sorted.
pub fn reference_set(refs: &BTreeMap<String, Reference>) -> Vec<u8> {
    let refs: Map<String, Value> = refs.iter().map(|(k, r)| (k.clone(), r.to_json())).collect();
    let mut out = serde_json::to_vec(&json!({ "refs": refs, "version": 1 })).unwrap_or_default();
    out.push(b'\n');
    out
}

/// One path segment of a URL: bytes other than unreserved characters (RFC 3986:
/// letters, digits, `-._~`) percent-encoded, so a field name with a space, `#` or `?`
/// stays one segment.
pub fn url_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for &b in name.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_sorted_and_spelled_as_kerchunk_reads_it() {
        let mut refs = BTreeMap::new();
        refs.insert("b/0.0".into(), Reference::Inline(vec![0, 1, 2, 0xff]));
        refs.insert(
            ".zgroup".into(),
            Reference::Text("{\"zarr_format\":2}".into()),
        );
        refs.insert(
            "a/1.0".into(),
            Reference::Range {
                url: "/data/a/__fragments/f/a0.tdb".into(),
                offset: 96,
                len: 200,
            },
        );
        refs.insert(
            "a/0.0".into(),
            Reference::Whole("http://127.0.0.1:8080/zarr/a/0.0".into()),
        );
        let text = String::from_utf8(reference_set(&refs)).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"refs":{".zgroup":"{\"zarr_format\":2}","a/0.0":["http://127.0.0.1:8080/zarr/a/0.0"],"#,
                r#""a/1.0":["/data/a/__fragments/f/a0.tdb",96,200],"b/0.0":"base64:AAEC/w=="},"version":1}"#,
                "\n"
            )
        );
    }

    #[test]
    fn url_segments_keep_only_unreserved_characters() {
        assert_eq!(url_segment("plain_name-1.x~"), "plain_name-1.x~");
        assert_eq!(url_segment("a b#c?d/e%"), "a%20b%23c%3Fd%2Fe%25");
        assert_eq!(url_segment("é"), "%C3%A9");
    }
}
