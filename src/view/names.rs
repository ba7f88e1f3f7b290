//! Names shown in the tree: as on disk, except `/`, NUL and `%` (and the names `.` and
//! `..`), which are percent-encoded so every field gets exactly one folder; and the
//! empty name (`tiledb.from_numpy` writes an attribute named `''`), shown as
//! [`ANONYMOUS`].

/// How the empty name is shown. No other name can be shown so: a `%` in a real name is
/// always encoded as `%25`.
pub const ANONYMOUS: &str = "%anonymous";

pub fn encode(name: &str) -> String {
    if name.is_empty() {
        return ANONYMOUS.to_string();
    }
    if name == "." || name == ".." {
        return name.bytes().map(|b| format!("%{b:02X}")).collect();
    }
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '/' => out.push_str("%2F"),
            '\0' => out.push_str("%00"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn encodes_only_what_a_file_name_cannot_hold() {
        assert_eq!(super::encode("a b/é%"), "a b%2Fé%25");
        assert_eq!(super::encode(".."), "%2E%2E");
        assert_eq!(super::encode("x.y"), "x.y");
        assert_eq!(super::encode(""), super::ANONYMOUS);
        assert_eq!(
            super::encode("%anonymous"),
            "%25anonymous",
            "a real name never collides"
        );
    }
}
