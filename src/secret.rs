//! Secrets (access tokens, S3 keys, encryption keys) as values that never show where
//! values are printed: a `Debug` of any struct that holds one, a log line, a panic
//! message. Only [`Secret::expose`] gives the text, at the one place that needs it.

/// A secret text. Its `Debug` says only that it is one.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

/// Fewer bytes than this make a guessable secret: a token or key of a public server is
/// refused at start when it is shorter (an empty one, from an unset variable in a
/// recipe, would otherwise open the server to anyone).
pub const MIN_SECRET_BYTES: usize = 16;

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// A secret as a file holds it: its text without the line end an editor or `echo`
    /// leaves (`\n` or `\r\n`), nothing else trimmed.
    pub fn from_file_text(text: &str) -> Secret {
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        Secret(text.to_string())
    }

    /// The text itself, for the code that checks or signs with it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its length in bytes (a secret's length is no secret worth keeping: it is checked
    /// against [`MIN_SECRET_BYTES`] and named in the refusal).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `given` is this secret, in time that does not depend on where they differ
    /// (a client cannot learn the secret byte by byte from how long a refusal takes).
    pub fn matches(&self, given: &[u8]) -> bool {
        let want = self.0.as_bytes();
        want.len() == given.len()
            && want
                .iter()
                .zip(given)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }

    /// `Err` naming `what` (`--token`) unless the secret is at least
    /// [`MIN_SECRET_BYTES`] long.
    pub fn check_strength(&self, what: &str) -> Result<(), String> {
        if self.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "{what} is {} bytes long: a secret needs at least {MIN_SECRET_BYTES} \
                 (an empty one is an unset variable; make one with `openssl rand -hex 16`)",
                self.len()
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_and_never_print() {
        let s = Secret::new("correct horse battery");
        assert!(s.matches(b"correct horse battery"));
        assert!(!s.matches(b"correct horse batterz"));
        assert!(!s.matches(b"correct horse"));
        assert!(!s.matches(b""));
        let shown = format!("{s:?} {:?}", Some((String::from("id"), s.clone())));
        assert!(!shown.contains("horse"), "{shown}");
        assert!(shown.contains("redacted"));
    }

    #[test]
    fn short_and_empty_secrets_are_refused() {
        assert!(Secret::new("").check_strength("--token").is_err());
        assert!(Secret::new("fifteen bytes..")
            .check_strength("--token")
            .is_err());
        assert!(Secret::new("sixteen bytes...")
            .check_strength("--token")
            .is_ok());
        let e = Secret::new("abc").check_strength("--token").unwrap_err();
        assert!(e.contains("--token") && e.contains("3 bytes"), "{e}");
    }

    #[test]
    fn a_file_keeps_its_secret_but_the_line_end() {
        assert_eq!(Secret::from_file_text("abc\n").expose(), "abc");
        assert_eq!(Secret::from_file_text("abc\r\n").expose(), "abc");
        assert_eq!(Secret::from_file_text(" abc ").expose(), " abc ");
        assert_eq!(Secret::from_file_text("abc\n\n").expose(), "abc\n");
    }
}
