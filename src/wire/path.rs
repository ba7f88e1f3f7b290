//! Request paths of the network doors turned into paths of the tree, safely: a path is
//! percent-decoded once, and any segment that could leave the tree or confuse a lookup
//! (`..`, `.`, an empty name in the middle, NUL, a `/` or `\` smuggled in as `%2F`/`%5C`)
//! refuses the request instead of being normalised away, so that no two spellings of a
//! path reach different files and none reaches outside the tree.

/// Why a request path was refused (an HTTP server answers 400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPath(pub &'static str);

impl std::fmt::Display for BadPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// The segments of the tree path that the URL path `raw` (query already cut off) names,
/// and whether it ended with `/` (a folder asked for as a folder).
pub fn segments(raw: &str) -> Result<(Vec<String>, bool), BadPath> {
    let Some(rest) = raw.strip_prefix('/') else {
        return Err(BadPath("the path does not start with /"));
    };
    let trailing = rest.is_empty() || rest.ends_with('/');
    let mut out = Vec::new();
    let parts: Vec<&str> = rest.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            // "/a/" ends in one empty part; "a//b" has one in the middle.
            if i + 1 == parts.len() {
                continue;
            }
            return Err(BadPath("an empty name in the path (//)"));
        }
        let name = decode(part)?;
        match name.as_str() {
            "." | ".." => return Err(BadPath("a . or .. in the path")),
            _ if name.contains(['/', '\\', '\0']) => {
                return Err(BadPath("a /, \\ or NUL inside a name"))
            }
            _ => out.push(name),
        }
    }
    Ok((out, trailing))
}

/// Percent-decodes one path segment; the result must be UTF-8 (every name in the tree is).
/// An escape is `%` and two hex digits (RFC 3986 §2.1), nothing else: `u8::from_str_radix`
/// alone would also take a sign (`%+b` as 0x0B), a second spelling of a name that no
/// client writes.
pub fn decode(part: &str) -> Result<String, BadPath> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let digit = |at: usize| bytes.get(at).and_then(|&b| char::from(b).to_digit(16));
            let (Some(high), Some(low)) = (digit(i + 1), digit(i + 2)) else {
                return Err(BadPath("a bad %-escape in the path"));
            };
            out.push((high << 4 | low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| BadPath("the path is not UTF-8"))
}

/// Percent-encodes a name for a link or an S3/WebDAV href: everything but the unreserved
/// characters of RFC 3986.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_escaped_paths() {
        assert_eq!(segments("/"), Ok((vec![], true)));
        assert_eq!(
            segments("/latest/a/values.bin"),
            Ok((
                vec!["latest".into(), "a".into(), "values.bin".into()],
                false
            ))
        );
        assert_eq!(
            segments("/at/12/a%20b/"),
            Ok((vec!["at".into(), "12".into(), "a b".into()], true))
        );
        assert_eq!(decode("%C3%A9t%c3%a9"), Ok("été".into()));
        assert_eq!(encode("a b/é"), "a%20b%2F%C3%A9");
        assert_eq!(decode(&encode("__1_2_abc~x")), Ok("__1_2_abc~x".into()));
    }

    #[test]
    fn paths_that_could_leave_the_tree_are_refused() {
        for bad in [
            "latest",
            "/..",
            "/a/../b",
            "/a/%2e%2e/b",
            "/a/./b",
            "/a//b",
            "/a%2Fb",
            "/a%5Cb",
            "/a%00b",
            "/a%zz",
            "/a%4",
            "/%ff",
            // Found by the request_path fuzz target: a sign is no hex digit.
            "/%+b",
            "/a%+1",
            "/a%-1",
            "/a% 1",
        ] {
            assert!(segments(bad).is_err(), "{bad} accepted");
        }
    }
}
