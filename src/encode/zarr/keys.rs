//! Chunk keys: `i.j` (v2, separator `.`), `c/i/j` (v3, the default encoding with `/`).

/// Parses chunk key coordinates (`sep` between them), in range of `counts`. Only the
/// canonical spelling counts (`01`, `+1` and `1.` are not keys), so one chunk has one
/// name.
pub fn parse_key(name: &str, sep: char, counts: &[u64]) -> Option<Vec<u64>> {
    let parts: Vec<u64> = name
        .split(sep)
        .map(|p| p.parse::<u64>().ok().filter(|v| v.to_string() == p))
        .collect::<Option<_>>()?;
    (parts.len() == counts.len() && parts.iter().zip(counts).all(|(p, n)| p < n)).then_some(parts)
}

/// A v2 chunk key: `i.j`.
pub fn key_v2(c: &[u64]) -> String {
    c.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

/// A v3 chunk key (or key folder, with fewer coordinates): `c/i/j`.
pub fn key_v3(c: &[u64]) -> String {
    std::iter::once("c".to_string())
        .chain(c.iter().map(u64::to_string))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_only_in_their_canonical_spelling() {
        let counts = [7, 9];
        assert_eq!(parse_key("1.2", '.', &counts), Some(vec![1, 2]));
        assert_eq!(parse_key("6.8", '.', &counts), Some(vec![6, 8]));
        assert_eq!(parse_key("1/2", '/', &counts), Some(vec![1, 2]));
        for bad in [
            "7.0", "0.9", "01.2", "+1.2", "1", "1.2.3", "1.", ".1", "", "-1.2", "a.b", "1/2",
        ] {
            assert_eq!(parse_key(bad, '.', &counts), None, "{bad:?}");
        }
        assert_eq!(key_v2(&[1, 2]), "1.2");
        assert_eq!(key_v2(&[0]), "0");
        assert_eq!(key_v3(&[]), "c");
        assert_eq!(key_v3(&[1, 2]), "c/1/2");
        for c in [vec![0, 0], vec![6, 8], vec![3, 5]] {
            assert_eq!(parse_key(&key_v2(&c), '.', &counts), Some(c));
        }
    }
}
