//! Why a request failed, as the HTTP layer saw it: the server's status and S3 error
//! document, or the transport's failure, and how many requests it took.
//!
//! Why not read it from the error `object_store` returns: in object_store 0.14 the status
//! is typed only in some variants (`NotFound` for a 404 on a GET, `PermissionDenied`,
//! `Unauthenticated`). A listing's failure is always `Error::Generic` around a private
//! type (`client::retry::RetryError` is `pub(crate)`), so its status, the server's error
//! document and the retry count exist only as text, whose wording an upgrade may change.
//! Instead the client's HTTP service is wrapped ([`Connector`], object_store's public
//! `HttpConnector` hook) and notes every response and transport error of an operation,
//! typed, in the [`Seen`] the operation runs with (a tokio task-local, set by
//! [`observed`]). Requests run outside an [`observed`] operation are not noted.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService, ReqwestConnector,
};
use object_store::ClientOptions;

/// The failure of the last request of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with an error status; `code` and `message` come from its S3
    /// error document (`<Error><Code>SlowDown</Code><Message>...`), where it sent one.
    Status {
        status: u16,
        /// `Forbidden` for 403: the status's standard name, if it has one.
        reason: Option<&'static str>,
        code: Option<String>,
        message: Option<String>,
    },
    /// No answer: connecting, sending or receiving failed.
    Transport {
        kind: HttpErrorKind,
        /// The innermost cause (`Connection refused (os error 111)`).
        reason: String,
    },
}

/// What the requests of one operation (a GET or a listing, with all its retries) met.
#[derive(Debug, Clone)]
pub struct Seen {
    pub start: Instant,
    /// Requests sent, retries included.
    pub requests: u32,
    /// The last request's failure; `None` once a request succeeded.
    pub last: Option<Failure>,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            start: Instant::now(),
            requests: 0,
            last: None,
        }
    }
}

impl Seen {
    /// How long the operation has run.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

tokio::task_local! {
    static SEEN: RefCell<Seen>;
}

/// Runs `operation` with a fresh [`Seen`] that its requests fill in; [`seen`] reads it
/// from inside (where the operation turns a failure into an error).
pub async fn observed<F: Future>(operation: F) -> F::Output {
    SEEN.scope(RefCell::new(Seen::default()), operation).await
}

/// What the requests of the current [`observed`] operation met so far.
pub fn seen() -> Option<Seen> {
    SEEN.try_with(|s| s.borrow().clone()).ok()
}

fn note(change: impl FnOnce(&mut Seen)) {
    // Outside an observed operation there is nothing to note into.
    let _ = SEEN.try_with(|s| change(&mut s.borrow_mut()));
}

/// The HTTP connector of the S3 client: object_store's own (reqwest), with every
/// request noted in the current operation's [`Seen`].
#[derive(Debug, Default)]
pub struct Connector;

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Observed(inner)))
    }
}

#[derive(Debug)]
struct Observed(HttpClient);

/// `HttpService` is an `async_trait` trait; this is the signature that macro gives its
/// method, written out so fragfs does not depend on the macro crate for one impl.
impl HttpService for Observed {
    fn call<'life0, 'async_trait>(
        &'life0 self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            note(|s| s.requests += 1);
            let response = match self.0.execute(req).await {
                Ok(response) => response,
                Err(e) => {
                    let failure = Failure::Transport {
                        kind: e.kind(),
                        reason: innermost(&e),
                    };
                    note(|s| s.last = Some(failure));
                    return Err(e);
                }
            };
            let status = response.status();
            if status.is_success() {
                note(|s| s.last = None);
                return Ok(response);
            }
            // An error document is small, and object_store reads it whole for its own
            // message anyway: read here, then handed on unchanged.
            let (parts, body) = response.into_parts();
            let body = body.bytes().await?;
            let document = String::from_utf8_lossy(&body);
            let failure = Failure::Status {
                status: status.as_u16(),
                reason: status.canonical_reason(),
                code: tag(&document, "Code"),
                message: tag(&document, "Message"),
            };
            note(|s| s.last = Some(failure));
            Ok(HttpResponse::from_parts(
                parts,
                HttpResponseBody::from(body),
            ))
        })
    }
}

/// The innermost cause of `e`, on one line: what the operating system or the TLS layer
/// said, under the layers that only say "error sending request".
pub fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut deepest = e;
    while let Some(cause) = deepest.source() {
        deepest = cause;
    }
    deepest.to_string().replace(['\n', '\r'], " ")
}

/// The text of the first `<name>...</name>` element of an S3 error document.
pub fn tag(document: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = document.find(&open)? + open.len();
    let len = document[start..].find(&format!("</{name}>"))?;
    let text = document[start..start + len].trim();
    (!text.is_empty()).then(|| text.replace(['\n', '\r'], " "))
}

/// A transport failure's kind, in words.
pub fn kind_words(kind: HttpErrorKind) -> &'static str {
    match kind {
        HttpErrorKind::Connect => "cannot connect",
        HttpErrorKind::Request => "the request failed",
        HttpErrorKind::Timeout => "timed out",
        HttpErrorKind::Interrupted => "the connection was interrupted",
        HttpErrorKind::Decode => "the response cannot be decoded",
        _ => "the transport failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_documents_give_their_code_and_message() {
        let doc = "<?xml version=\"1.0\"?>\n<Error><Code>SlowDown</Code><Message>Please \
                   reduce your request rate.</Message><RequestId>1</RequestId></Error>";
        assert_eq!(tag(doc, "Code").as_deref(), Some("SlowDown"));
        assert_eq!(
            tag(doc, "Message").as_deref(),
            Some("Please reduce your request rate.")
        );
        assert_eq!(tag("<html>502 Bad Gateway</html>", "Code"), None);
        assert_eq!(tag("<Error><Code></Code></Error>", "Code"), None);
    }

    #[test]
    fn the_innermost_cause_is_the_one_that_says_what_happened() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = HttpError::new(HttpErrorKind::Connect, refused);
        assert_eq!(innermost(&e), "connection refused");
    }

    #[test]
    fn nothing_is_noted_outside_an_observed_operation() {
        assert!(seen().is_none());
        note(|s| s.requests += 1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let inside = runtime.block_on(observed(async {
            note(|s| s.requests += 2);
            seen()
        }));
        assert_eq!(inside.map(|s| s.requests), Some(2));
    }
}
