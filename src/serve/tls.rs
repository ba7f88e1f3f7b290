//! HTTPS for the HTTP, WebDAV and S3 doors (`--tls-cert FILE --tls-key FILE`): rustls,
//! already the S3 client's TLS stack, with its aws-lc-rs provider. A token or a SigV4
//! signature sent in clear over a network can be read off it; behind TLS it cannot.
//!
//! The files are read once, at start: a certificate renewed on disk takes a restart.
//! A TLS handshake must complete within the request-head timeout, like a request head.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};

/// Where the certificate chain and its key are (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate first, then any intermediates.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The acceptor of `files`: HTTP/1.1 over TLS 1.2 or 1.3; an error naming the file and
/// what is wrong with it.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor> {
    let bad =
        |path: &Path, what: String| Error::InvalidArgument(format!("{}: {what}", path.display()));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| bad(&files.cert, format!("not a PEM certificate file: {e}")))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(&files.cert, format!("a certificate does not parse: {e}")))?;
    if certs.is_empty() {
        return Err(bad(&files.cert, "no certificate in it".into()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| bad(&files.key, format!("no PEM private key in it: {e}")))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::InvalidArgument(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            bad(
                &files.key,
                format!("does not go with {}: {e}", files.cert.display()),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
