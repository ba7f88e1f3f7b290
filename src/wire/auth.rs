//! The `Authorization` header (RFC 9110 §11.6.2) as the HTTP and WebDAV doors take a
//! token: a bearer token (RFC 6750), or basic credentials (RFC 7617) whose password is
//! the token (browsers, GDAL, fsspec and Windows' WebDAV client send only those).

/// What an `Authorization` header offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `Bearer <token>`.
    Bearer(Vec<u8>),
    /// `Basic <base64 of user:password>`.
    Basic { user: Vec<u8>, password: Vec<u8> },
}

impl Credentials {
    /// The secret part: the bearer token, or the basic password.
    pub fn secret(&self) -> &[u8] {
        match self {
            Credentials::Bearer(t) => t,
            Credentials::Basic { password, .. } => password,
        }
    }
}

/// The credentials of an `Authorization` header's value; `None` for another scheme or
/// a malformed value. Scheme names are case-insensitive; the rest is as sent.
pub fn credentials(value: &[u8]) -> Option<Credentials> {
    let value = trim(value);
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    let rest = trim(rest);
    if scheme.eq_ignore_ascii_case(b"bearer") {
        // RFC 6750's b64token: visible characters, no spaces.
        if rest.is_empty() || rest.iter().any(|b| !b.is_ascii_graphic()) {
            return None;
        }
        return Some(Credentials::Bearer(rest.to_vec()));
    }
    if scheme.eq_ignore_ascii_case(b"basic") {
        let pair = base64_decode(rest)?;
        let colon = pair.iter().position(|&b| b == b':')?;
        return Some(Credentials::Basic {
            user: pair[..colon].to_vec(),
            password: pair[colon + 1..].to_vec(),
        });
    }
    None
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if !first.is_ascii_whitespace() {
            break;
        }
        b = rest;
    }
    while let [rest @ .., last] = b {
        if !last.is_ascii_whitespace() {
            break;
        }
        b = rest;
    }
    b
}

/// Standard base64 (RFC 4648 §4), padded or not; `None` when malformed (a character
/// outside the alphabet, padding in the middle, or a length no encoding has).
pub fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    let body = match text.iter().position(|&b| b == b'=') {
        Some(at) => {
            let pad = &text[at..];
            // At most two padding characters, at the end, to a multiple of four.
            if pad.len() > 2 || pad.iter().any(|&b| b != b'=') || !text.len().is_multiple_of(4) {
                return None;
            }
            &text[..at]
        }
        None => text,
    };
    if body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6 | u32::from(v)) & 0xff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_and_basic_credentials() {
        assert_eq!(
            credentials(b"Bearer abc.def-1"),
            Some(Credentials::Bearer(b"abc.def-1".to_vec()))
        );
        assert_eq!(
            credentials(b"  bearer   tok  "),
            Some(Credentials::Bearer(b"tok".to_vec()))
        );
        let basic = credentials(b"Basic dXNlcjpzM2NyZXQ=").unwrap();
        assert_eq!(
            basic,
            Credentials::Basic {
                user: b"user".to_vec(),
                password: b"s3cret".to_vec()
            }
        );
        assert_eq!(basic.secret(), b"s3cret");
        // `Og==` is ":": an empty user and an empty password.
        assert_eq!(credentials(b"BASIC Og==").unwrap().secret(), b"");
        for bad in [
            &b"Bearer"[..],
            b"Bearer ",
            b"Bearer a b",
            b"Basic !!!!",
            b"Basic dXNlcg==",
            b"Digest abc",
            b"",
            b"Basic",
        ] {
            assert_eq!(credentials(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn base64_padded_unpadded_and_malformed() {
        assert_eq!(
            base64_decode(b"dXNlcjpzM2NyZXQ="),
            Some(b"user:s3cret".to_vec())
        );
        assert_eq!(
            base64_decode(b"dXNlcjpzM2NyZXQ"),
            Some(b"user:s3cret".to_vec())
        );
        assert_eq!(base64_decode(b""), Some(Vec::new()));
        assert_eq!(base64_decode(b"YQ=="), Some(b"a".to_vec()));
        for bad in [
            &b"!!"[..],
            b"Y",
            b"YQ=",
            b"Y=Q=",
            b"YQ===",
            b"=YQ=",
            b"YQ==YQ==",
        ] {
            assert_eq!(base64_decode(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
