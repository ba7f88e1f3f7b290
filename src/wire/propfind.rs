//! `PROPFIND` request bodies (RFC 4918 §14.20): which properties a WebDAV client asks
//! for. A body is parsed whole (it is at most [`MAX_BODY`] bytes) with no DOCTYPE, so no
//! entity can expand it; what it may ask is bounded too ([`MAX_PROPERTIES`] distinct
//! properties, names of at most [`MAX_NAME`] bytes), because every property asked is
//! echoed in the answer of every entry of a folder: a 60 KiB body of thousands of long
//! names would otherwise make each entry's answer as large as the body.

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// Bytes of a `PROPFIND` body: a request for every property a client knows fits in a
/// few kilobytes.
pub const MAX_BODY: usize = 64 << 10;
/// Distinct properties one body may name (Finder, Explorer, davfs2 and rclone ask for
/// at most a dozen).
pub const MAX_PROPERTIES: usize = 64;
/// Bytes of a property's namespace, and of its local name.
pub const MAX_NAME: usize = 256;
/// The namespace of WebDAV's own properties.
pub const DAV: &str = "DAV:";

/// What a `PROPFIND` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// Every live property (also an empty body).
    AllProp,
    /// The names of the properties, without values.
    PropName,
    /// These properties, each once, in the order first asked: (namespace, local name).
    Props(Vec<(String, String)>),
}

/// Why a body is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a PROPFIND body (a server answers 400).
    Malformed(String),
    /// A PROPFIND body asking more than the bounds allow (413).
    TooMuch(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Malformed(why) | Refused::TooMuch(why) => f.write_str(why),
        }
    }
}

fn malformed(why: impl Into<String>) -> Refused {
    Refused::Malformed(why.into())
}

/// What a `PROPFIND` body asks for; an error says why the body is not one, or asks too
/// much.
pub fn parse(body: &[u8]) -> Result<Wanted, Refused> {
    if body.len() > MAX_BODY {
        return Err(Refused::TooMuch(format!(
            "a PROPFIND body is at most {} KiB",
            MAX_BODY >> 10
        )));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Wanted::AllProp);
    }
    let text = std::str::from_utf8(body).map_err(|_| malformed("not UTF-8"))?;
    let mut reader = NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut depth = 0usize;
    let mut seen_root = false;
    let mut wanted: Option<Wanted> = None;
    let mut props: Vec<(String, String)> = Vec::new();
    // Which element of depth 1 we are inside (prop, allprop, ...).
    let mut section: Option<String> = None;
    loop {
        let (ns, event) = reader
            .read_resolved_event()
            .map_err(|e| malformed(e.to_string()))?;
        let ns = match ns {
            ResolveResult::Bound(n) => Some(n.0.to_vec()),
            ResolveResult::Unbound => None,
            ResolveResult::Unknown(p) => {
                return Err(malformed(format!(
                    "unknown namespace prefix {}",
                    String::from_utf8_lossy(&p)
                )))
            }
        };
        let (start, empty) = match &event {
            Event::Start(_) => (true, false),
            Event::Empty(_) => (true, true),
            _ => (false, false),
        };
        match event {
            Event::Start(ref e) | Event::Empty(ref e) if start => {
                let local = std::str::from_utf8(e.local_name().into_inner())
                    .map_err(|_| malformed("a name is not UTF-8"))?
                    .to_string();
                if local.is_empty()
                    || !local
                        .chars()
                        .all(|c| c.is_alphanumeric() || "_-.".contains(c))
                {
                    return Err(malformed(format!("a bad element name {local:?}")));
                }
                let in_dav = ns.as_deref() == Some(DAV.as_bytes());
                match depth {
                    0 => {
                        if seen_root {
                            return Err(malformed("two root elements"));
                        }
                        seen_root = true;
                        if !(in_dav && local == "propfind") {
                            return Err(malformed(format!(
                                "the root is {local}, not DAV: propfind"
                            )));
                        }
                    }
                    1 if in_dav => {
                        match local.as_str() {
                            "allprop" => wanted = Some(Wanted::AllProp),
                            "propname" => wanted = Some(Wanted::PropName),
                            "prop" => wanted = Some(Wanted::Props(Vec::new())),
                            // `include` (extra properties with allprop) and unknown
                            // elements are ignored, as RFC 4918 asks.
                            _ => {}
                        }
                        section = Some(local.clone());
                    }
                    1 => section = None,
                    2 if section.as_deref() == Some("prop") => {
                        let ns = String::from_utf8(ns.unwrap_or_default())
                            .map_err(|_| malformed("a namespace is not UTF-8"))?;
                        if ns.len() > MAX_NAME || local.len() > MAX_NAME {
                            return Err(Refused::TooMuch(format!(
                                "a property's namespace or name is over {MAX_NAME} bytes"
                            )));
                        }
                        let prop = (ns, local);
                        if !props.contains(&prop) {
                            if props.len() == MAX_PROPERTIES {
                                return Err(Refused::TooMuch(format!(
                                    "a PROPFIND asks for at most {MAX_PROPERTIES} properties"
                                )));
                            }
                            props.push(prop);
                        }
                    }
                    _ => {}
                }
                if !empty {
                    depth += 1;
                }
            }
            Event::End(_) => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| malformed("an end tag too many"))?;
                if depth == 1 {
                    section = None;
                }
            }
            Event::Text(t) if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) => {
                return Err(malformed("text outside the root element"));
            }
            Event::DocType(_) => return Err(malformed("a DOCTYPE (not accepted)")),
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root || depth != 0 {
        return Err(malformed("the document is not complete"));
    }
    match wanted {
        Some(Wanted::Props(_)) => Ok(Wanted::Props(props)),
        Some(w) => Ok(w),
        None => Err(malformed("neither prop, propname nor allprop")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(v: &[(&str, &str)]) -> Wanted {
        Wanted::Props(
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        )
    }

    #[test]
    fn propfind_bodies() {
        assert_eq!(parse(b""), Ok(Wanted::AllProp));
        assert_eq!(parse(b" \r\n"), Ok(Wanted::AllProp));
        assert_eq!(
            parse(b"<?xml version=\"1.0\"?><propfind xmlns=\"DAV:\"><allprop/></propfind>"),
            Ok(Wanted::AllProp)
        );
        assert_eq!(
            parse(b"<D:propfind xmlns:D=\"DAV:\"><D:propname/></D:propfind>"),
            Ok(Wanted::PropName)
        );
        assert_eq!(
            parse(
                b"<a:propfind xmlns:a=\"DAV:\" xmlns:z=\"urn:x\">\n<a:prop>\
                  <a:getcontentlength/><z:quota></z:quota><a:resourcetype/>\
                  <plain xmlns=\"\"/><a:getcontentlength/></a:prop></a:propfind>"
            ),
            Ok(props(&[
                ("DAV:", "getcontentlength"),
                ("urn:x", "quota"),
                ("DAV:", "resourcetype"),
                ("", "plain"),
            ]))
        );
    }

    #[test]
    fn malformed_bodies_are_refused() {
        for bad in [
            &b"<propfind xmlns=\"DAV:\"><prop>"[..],
            b"<propfind xmlns=\"DAV:\"><prop></propfind>",
            b"<propfind xmlns=\"urn:not-dav\"><allprop/></propfind>",
            b"<D:propfind><D:allprop/></D:propfind>",
            b"<propfind xmlns=\"DAV:\"/><propfind xmlns=\"DAV:\"/>",
            b"<propfind xmlns=\"DAV:\"></propfind>",
            b"garbage",
            b"<!DOCTYPE x [<!ENTITY a \"b\">]><propfind xmlns=\"DAV:\"><allprop/></propfind>",
            b"<propfind xmlns=\"DAV:\"><allprop/></propfind>trailing",
            b"\xff\xfe",
        ] {
            assert!(
                matches!(parse(bad), Err(Refused::Malformed(_))),
                "{} accepted",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// The body that made 640 MB answers per folder: a long namespace, thousands of
    /// properties. Repeats of one property count once.
    #[test]
    fn bodies_asking_too_much_are_refused() {
        let many = |n: usize, ns: &str| {
            let mut b = format!("<D:propfind xmlns:D=\"DAV:\" xmlns:x=\"{ns}\"><D:prop>");
            for i in 0..n {
                b.push_str(&format!("<x:p{i}/>"));
            }
            b.push_str("</D:prop></D:propfind>");
            b
        };
        assert!(
            matches!(parse(many(64, "urn:a").as_bytes()), Ok(Wanted::Props(p)) if p.len() == 64)
        );
        assert!(matches!(
            parse(many(65, "urn:a").as_bytes()),
            Err(Refused::TooMuch(_))
        ));
        let long = format!("urn:{}", "n".repeat(MAX_NAME));
        assert!(matches!(
            parse(many(1, &long).as_bytes()),
            Err(Refused::TooMuch(_))
        ));
        let repeated = format!(
            "<D:propfind xmlns:D=\"DAV:\"><D:prop>{}</D:prop></D:propfind>",
            "<D:getetag/>".repeat(2000)
        );
        assert_eq!(
            parse(repeated.as_bytes()),
            Ok(props(&[("DAV:", "getetag")]))
        );
        let name = format!(
            "<D:propfind xmlns:D=\"DAV:\"><D:prop><D:{}/></D:prop></D:propfind>",
            "n".repeat(MAX_NAME + 1)
        );
        assert!(matches!(parse(name.as_bytes()), Err(Refused::TooMuch(_))));
        assert!(matches!(
            parse(&vec![b' '; MAX_BODY + 1]),
            Err(Refused::TooMuch(_))
        ));
    }
}
