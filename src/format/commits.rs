//! The small commit-area files (`01-array-layout.md` §6): `.con`, `.vac`, `.ign`.

use super::error::Result;
use super::reader::Reader;

/// One entry of a consolidated-commits (`.con`) file.
#[derive(Debug, Clone, PartialEq)]
pub struct ConEntry {
    /// Path relative to the array root, e.g. `__commits/__1_1_<uuid>_15.wrt`.
    pub path: String,
    /// The embedded `.del`/`.upd` generic tile, if any.
    pub payload: Option<Vec<u8>>,
}

/// Parses a `.con` file as a byte stream: a path up to `\n`, then for `.del`/`.upd`
/// entries a `u64` size and that many bytes.
pub fn parse_consolidated_commits(bytes: &[u8]) -> Result<Vec<ConEntry>> {
    let mut r = Reader::new(bytes);
    let mut entries = Vec::new();
    while !r.is_empty() {
        let rest = r.rest();
        let line_len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let path = String::from_utf8_lossy(r.bytes(line_len as u64, "commit path")?).into_owned();
        if !r.is_empty() {
            r.u8("commit path newline")?;
        }
        let payload = if path.ends_with(".del") || path.ends_with(".upd") {
            let len = r.u64("embedded condition size")?;
            Some(r.bytes(len, "embedded condition")?.to_vec())
        } else {
            None
        };
        if !path.is_empty() {
            entries.push(ConEntry { path, payload });
        }
    }
    Ok(entries)
}

/// Lines of a `.vac` or `.ign` text file (empty lines dropped).
pub fn parse_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .split('\n')
        .map(|l| l.trim_end_matches('\r').to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Normalises a `.vac` entry like TileDB's `get_full_vac_uri`: from `__fragments` on if
/// present, else the last path component; relative to the array root.
pub fn normalize_vacuum_entry(entry: &str) -> String {
    let entry = entry.trim_end_matches('/');
    if let Some(pos) = entry.find("__fragments/") {
        entry[pos..].to_string()
    } else {
        entry.rsplit('/').next().unwrap_or(entry).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn con_file_with_embedded_delete() {
        let mut bytes = b"__commits/__1_1_a_16.wrt\n__commits/__2_2_b_16.del\n".to_vec();
        bytes.extend(3u64.to_le_bytes());
        bytes.extend(b"\nxy");
        bytes.extend(b"__3_3_c_9.ok\n");
        let e = parse_consolidated_commits(&bytes).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].payload.as_deref(), Some(&b"\nxy"[..]));
        assert_eq!(e[2].path, "__3_3_c_9.ok");
    }

    #[test]
    fn vacuum_entries_are_normalised() {
        assert_eq!(
            normalize_vacuum_entry("file:///data/arr/__fragments/__1_2_x_22"),
            "__fragments/__1_2_x_22"
        );
        assert_eq!(normalize_vacuum_entry("/data/arr/__1_2_x_8"), "__1_2_x_8");
    }
}
