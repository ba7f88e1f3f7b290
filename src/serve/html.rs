//! Text for HTML pages: escaped, and small pieces every part of the folder page writes.

/// `text` for HTML text and attribute values: the five specials as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `12,345`: a count as the page prints it.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The name a page shows for the served tree: the last part of its location (a folder's
/// name, an S3 prefix's last part), never the whole path, which tells a visitor where
/// the server keeps its files.
pub fn short_name(location: &str) -> String {
    let trimmed = location.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    match last {
        "" => "array".to_string(),
        name => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_in_text() {
        assert_eq!(escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
    }

    #[test]
    fn a_location_shows_as_its_last_part() {
        assert_eq!(short_name("/srv/data/weather/"), "weather");
        assert_eq!(short_name("s3://bucket/prefix/arr"), "arr");
        assert_eq!(short_name("/"), "array");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
