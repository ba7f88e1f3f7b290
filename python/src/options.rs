//! The keyword arguments of `Tree(uri, **options)`: the command line's options for
//! reaching S3 (`--endpoint-url`, `--region`, `--profile`, `--no-sign-request`,
//! `--addressing`, `--retry-timeout`), keys given by the program, the cache bound, an
//! encrypted array's key, the disk cache (`--cache-dir`, `--cache-dir-size`,
//! `--cache-decrypted`) and a lone Filo chunk's type and writer (`--filo-type`,
//! `--filo-version`).

use std::time::Duration;

use std::path::PathBuf;
use std::sync::Arc;

use fragfs::array::{parse_key, OpenOptions};
use fragfs::filo::{ColumnType, FormatVersion};
use fragfs::storage::diskcache::{CacheConfig, DiskCache};
use fragfs::storage::s3::S3Options;
use fragfs::view::{open_disk_cache, ChunkOptions};
use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// How to reach an `s3://` array; unused for a local one.
#[derive(Default)]
pub struct S3Args {
    pub endpoint_url: Option<String>,
    pub region: Option<String>,
    pub profile: Option<String>,
    pub no_sign_request: bool,
    pub virtual_hosted: Option<bool>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// Seconds.
    pub retry_timeout: Option<f64>,
}

impl S3Args {
    /// The store's options; keys come as a pair or not at all.
    pub fn options(self) -> PyResult<S3Options> {
        let keys = match (self.access_key_id, self.secret_access_key) {
            (Some(id), Some(secret)) => Some((id, secret)),
            (None, None) => None,
            _ => {
                return Err(PyValueError::new_err(
                    "access_key_id goes with secret_access_key: give both or neither",
                ))
            }
        };
        let retry_timeout = match self.retry_timeout {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(PyValueError::new_err(format!(
                    "retry_timeout {s}: a number of seconds, 0 or more"
                )))
            }
        };
        Ok(S3Options {
            endpoint_url: self.endpoint_url,
            region: self.region,
            profile: self.profile,
            no_sign_request: self.no_sign_request,
            virtual_hosted: self.virtual_hosted,
            retry_timeout,
            keys,
        })
    }
}

/// How to open the array: its key (32 bytes of text, or 64 hex digits, as
/// `--encryption-key`).
pub fn open_options(encryption_key: Option<&str>) -> PyResult<OpenOptions> {
    let key = encryption_key
        .map(parse_key)
        .transpose()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(OpenOptions { key })
}

/// The disk cache `cache_dir` names, opened as the command line opens it: one that cannot
/// be used is logged and reads go on without it.
pub fn disk_cache(
    cache_dir: Option<PathBuf>,
    cache_dir_size: Option<u64>,
    cache_decrypted: bool,
) -> PyResult<Option<Arc<DiskCache>>> {
    if cache_dir.is_none() && (cache_dir_size.is_some() || cache_decrypted) {
        return Err(PyValueError::new_err(
            "cache_dir_size and cache_decrypted go with cache_dir",
        ));
    }
    let config = cache_dir.map(|dir| CacheConfig {
        dir,
        size: cache_dir_size,
        decrypted: cache_decrypted,
    });
    open_disk_cache(config.as_ref()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A lone Filo chunk file's column type and writer, by the command line's names.
pub fn chunk_options(
    filo_type: Option<&str>,
    filo_version: Option<&str>,
) -> PyResult<ChunkOptions> {
    let column_type = filo_type
        .map(|name| {
            ColumnType::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = ColumnType::ALL.iter().map(|t| t.name()).collect();
                PyValueError::new_err(format!(
                    "unknown Filo type {name:?} (one of {})",
                    known.join(", ")
                ))
            })
        })
        .transpose()?;
    let version = filo_version
        .map(|name| {
            FormatVersion::from_name(name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown Filo version {name:?} (velvia-filo-0.3 or velvia-filo-0.3.0)"
                ))
            })
        })
        .transpose()?
        .unwrap_or_default();
    Ok(ChunkOptions {
        column_type,
        version,
    })
}
