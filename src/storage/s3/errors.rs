//! Failed requests as errors: the errno a reader sees and the words the server said.

use std::ops::Range;

use object_store::client::HttpError;

use super::failure::{self, Failure, Seen};
use crate::error::{Error, Place};

/// `s3://bucket/key bytes a..b`.
pub(crate) fn describe(bucket: &str, full: &str, range: Option<&Range<u64>>) -> String {
    match range {
        Some(r) => format!("s3://{bucket}/{full} bytes {}..{}", r.start, r.end),
        None => format!("s3://{bucket}/{full}"),
    }
}

/// A failed request as an error with the errno a reader should see: ENOENT for a missing
/// object or bucket, EACCES for refused credentials, EIO for the rest (retries
/// exhausted); the message names the bucket, key and range and says what the server
/// answered. Decided from types only: the variant object_store chose, the status and
/// error document the HTTP layer saw (`seen`, see [`failure`]), the kind of a transport
/// error; never from the text of object_store's messages.
pub(crate) fn s3_error(
    bucket: &str,
    full: &str,
    range: Option<&Range<u64>>,
    e: object_store::Error,
    seen: Option<&Seen>,
) -> Error {
    use std::io::ErrorKind;
    let status = match seen.and_then(|s| s.last.as_ref()) {
        Some(Failure::Status { status, .. }) => Some(*status),
        _ => None,
    };
    let kind = match (&e, status) {
        (object_store::Error::NotFound { .. }, _) | (_, Some(404)) => ErrorKind::NotFound,
        (object_store::Error::PermissionDenied { .. }, _)
        | (object_store::Error::Unauthenticated { .. }, _)
        | (_, Some(401 | 403)) => ErrorKind::PermissionDenied,
        _ => ErrorKind::Other,
    };
    let message = format!("{}: {}", describe(bucket, full, range), answer(&e, seen));
    Error::io(Place::file(full), std::io::Error::new(kind, message))
}

/// What the server answered, on one line: the status with its S3 error code and message
/// (`503 Service Unavailable: SlowDown: Please reduce your request rate.`), or the
/// transport's failure and its cause (`cannot connect: Connection refused`); then how
/// many times it was retried, for how long.
pub(crate) fn answer(e: &object_store::Error, seen: Option<&Seen>) -> String {
    let last = seen.and_then(|s| s.last.as_ref());
    let mut out = match (transport(e), last) {
        // The error itself is a transport failure (a body cut short after the answer
        // began): it is what happened last.
        (Some(t), _) => t,
        (
            None,
            Some(Failure::Status {
                status,
                reason,
                code,
                message,
            }),
        ) => {
            let mut out = match reason {
                Some(reason) => format!("{status} {reason}"),
                None => status.to_string(),
            };
            for part in [code, message].into_iter().flatten() {
                out.push_str(": ");
                out.push_str(part);
            }
            out
        }
        (None, Some(Failure::Transport { kind, reason })) => {
            format!("{}: {reason}", failure::kind_words(*kind))
        }
        // Nothing typed to go by: object_store's message, shown as it is.
        (None, None) => match e {
            object_store::Error::NotFound { .. } => "no such object".to_string(),
            object_store::Error::PermissionDenied { .. } => "access denied".to_string(),
            object_store::Error::Unauthenticated { .. } => "not authenticated".to_string(),
            e => e.to_string().replace(['\n', '\r'], " "),
        },
    };
    if let Some(s) = seen.filter(|s| s.requests > 1) {
        out.push_str(&format!(
            " (after {} retries in {:.1}s)",
            s.requests - 1,
            s.elapsed().as_secs_f64()
        ));
    }
    out
}

/// A transport failure in `e`'s causes (object_store keeps reqwest's error as an
/// [`HttpError`], public and typed), as `kind: innermost cause`.
pub(crate) fn transport(e: &object_store::Error) -> Option<String> {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<HttpError>() {
            return Some(format!(
                "{}: {}",
                failure::kind_words(h.kind()),
                failure::innermost(h)
            ));
        }
        cause = c.source();
    }
    None
}

/// The message of an error without the place in front (for one-line open errors, whose
/// message names the URI already).
pub(crate) fn source_text(e: &Error) -> String {
    match e {
        Error::Io { cause, .. } => cause.to_string(),
        e => e.to_string(),
    }
}
