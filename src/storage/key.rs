//! Keys of a store: joining paths, keeping keys inside the root, and the error for a
//! range past an object's end.

use crate::error::{Error, Place, Result};

/// `a/b` joined to `c` as `a/b/c`; an empty prefix adds nothing.
pub fn join(prefix: &str, name: &str) -> String {
    match (prefix.trim_end_matches('/'), name) {
        ("", name) => name.to_string(),
        (prefix, "") => prefix.to_string(),
        (prefix, name) => format!("{prefix}/{name}"),
    }
}

/// The error for a range that passes the end of an object.
pub(crate) fn past_end(key: &str, offset: u64, len: u64, size: u64) -> Error {
    Error::corrupt(
        Place::file(key),
        format!(
            "truncated file: needs bytes {offset}..{} but the file has {size} bytes",
            offset.saturating_add(len)
        ),
    )
}

/// Checks that a key stays inside the store's root: no `..`, no absolute path, no empty
/// component (a key comes from names found in the array's own files).
pub(crate) fn check_key(key: &str) -> Result<()> {
    let bad = key.starts_with('/')
        || key
            .split('/')
            .any(|part| part == ".." || part == "." || (part.is_empty() && !key.is_empty()));
    if bad {
        return Err(Error::InvalidArgument(format!(
            "{key:?}: not a path inside the array"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_inside_the_root() {
        assert!(check_key("__fragments/x/a0.tdb").is_ok());
        assert!(check_key("").is_ok());
        for bad in ["/etc/passwd", "../x", "a/../../b", "a//b", "a/./b"] {
            assert!(check_key(bad).is_err(), "{bad}");
        }
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a/", "b"), "a/b");
        assert_eq!(join("a", ""), "a");
    }
}
