//! `fragfs.refs(uri, ...)`: the kerchunk reference set `fragfs refs` writes, as JSON text
//! (the Python side parses it), made with the GIL released; and `TileDecoder`, the Rust
//! half of the `fragfs_tile` numcodecs codec (`fragfs.codec.FragfsTile`), which decodes
//! a stored tile (or an enveloped chunk) with the GIL released.

use std::path::Path;
use std::sync::Mutex;

use fragfs::read::tile_codec::TileCodec;
use fragfs::view::open_array;
use fragfs::view::tiledb::{RefOptions, Refs, DEFAULT_INLINE_LIMIT};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;
use crate::options::{open_options, S3Args};

/// The reference set of `uri`'s Zarr v2 store at `at` (ms since the epoch; `None`, the
/// latest), as JSON text. Chunks none of the three ways can give raise `ValueError`,
/// one line per chunk with why.
#[pyfunction]
#[pyo3(signature = (
    uri,
    at = None,
    serve_url = None,
    inline_limit = DEFAULT_INLINE_LIMIT,
    *,
    endpoint_url = None,
    region = None,
    profile = None,
    no_sign_request = false,
    virtual_hosted = None,
    access_key_id = None,
    secret_access_key = None,
    retry_timeout = None,
    cache_size = fragfs::view::DEFAULT_CACHE_SIZE,
    encryption_key = None,
))]
#[allow(clippy::too_many_arguments)]
pub fn refs_json(
    py: Python<'_>,
    uri: String,
    at: Option<u64>,
    serve_url: Option<String>,
    inline_limit: u64,
    endpoint_url: Option<String>,
    region: Option<String>,
    profile: Option<String>,
    no_sign_request: bool,
    virtual_hosted: Option<bool>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    retry_timeout: Option<f64>,
    cache_size: u64,
    encryption_key: Option<String>,
) -> PyResult<String> {
    let s3 = S3Args {
        endpoint_url,
        region,
        profile,
        no_sign_request,
        virtual_hosted,
        access_key_id,
        secret_access_key,
        retry_timeout,
    }
    .options()?;
    let options = open_options(encryption_key.as_deref())?;
    let asked = RefOptions {
        serve_url,
        inline_limit,
    };
    let made = py
        .detach(|| {
            let tree = open_array(Path::new(&uri), &s3, options, cache_size)?;
            tree.refs(at, &asked)
        })
        .map_err(to_py)?;
    match made {
        Refs::Made { json, .. } => Ok(String::from_utf8_lossy(&json).into_owned()),
        Refs::Refused(chunks) => {
            let lines: Vec<String> = chunks
                .iter()
                .map(|(c, why)| format!("{c}: {why}"))
                .collect();
            let n = match chunks.len() {
                1 => "1 chunk".to_string(),
                n => format!("{n} chunks"),
            };
            Err(PyValueError::new_err(format!(
                "{uri}: {n} can be neither referenced, inlined nor served (a larger \
                 inline_limit, or serve_url, would):\n{}",
                lines.join("\n")
            )))
        }
    }
}

/// A `fragfs_tile` codec's decoder, from its configuration (JSON text).
#[pyclass(frozen, module = "fragfs")]
pub struct TileDecoder {
    codec: TileCodec,
}

#[pymethods]
impl TileDecoder {
    #[new]
    fn new(config: &str) -> PyResult<TileDecoder> {
        let codec =
            TileCodec::from_json_text(config).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(TileDecoder { codec })
    }

    /// The chunk `data` (a stored tile, or an enveloped chunk) holds, decoded: a
    /// [`DecodedChunk`], which numpy wraps without a copy (`np.asarray`).
    fn decode(&self, py: Python<'_>, data: &[u8]) -> PyResult<DecodedChunk> {
        let bytes = py
            .detach(|| {
                let mut bytes = spare_buffer();
                self.codec.decode_into(data, &mut bytes).map(|()| bytes)
            })
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(DecodedChunk { bytes })
    }

    /// Bytes of a decoded chunk.
    #[getter]
    fn decoded_size(&self) -> Option<u64> {
        self.codec.decoded_size()
    }
}

/// A decoded chunk, owned by Rust and lent to numpy through the array interface
/// protocol, so the decoder's buffer becomes the array's memory as it is. Copying it
/// into a `bytes` cost a second allocation of the chunk's size, its page faults and a
/// copy: a fifth of the codec's time on a 32 MiB tile. No `unsafe` is needed: numpy
/// keeps this object alive as the array's base, and the buffer never changes (the class
/// is frozen and the `Vec` is never touched again), so the address stays valid.
///
/// When the last array over it goes, the buffer goes back to [`SPARE_BUFFERS`]: zarr
/// copies a decoded chunk into its output and drops it, so the next tile is decoded
/// into memory already mapped, where a fresh allocation of a 32 MiB tile cost its
/// page faults and the kernel's zeroing (a third of the decode).
#[pyclass(frozen, module = "fragfs")]
pub struct DecodedChunk {
    bytes: Vec<u8>,
}

impl Drop for DecodedChunk {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        if bytes.capacity() > SPARE_BUFFER_LIMIT {
            return;
        }
        if let Ok(mut spares) = SPARE_BUFFERS.lock() {
            if spares.len() < SPARE_BUFFER_COUNT {
                spares.push(bytes);
            }
        }
    }
}

/// Decoded buffers kept for the next decodes of this process, at most
/// [`SPARE_BUFFER_COUNT`] of at most [`SPARE_BUFFER_LIMIT`] bytes each: a worker
/// decodes a tile or two at a time, so two cover it, and what they hold is bounded.
static SPARE_BUFFERS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
const SPARE_BUFFER_COUNT: usize = 2;
const SPARE_BUFFER_LIMIT: usize = 256 << 20;

/// A spare buffer (the largest), or a new one.
fn spare_buffer() -> Vec<u8> {
    let Ok(mut spares) = SPARE_BUFFERS.lock() else {
        return Vec::new();
    };
    let largest = (0..spares.len()).max_by_key(|&i| spares[i].capacity());
    largest.map(|i| spares.swap_remove(i)).unwrap_or_default()
}

#[pymethods]
impl DecodedChunk {
    /// numpy's array interface (version 3): a read-only 1-D array of `uint8`.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", (self.bytes.len(),))?;
        interface.set_item("typestr", "|u1")?;
        interface.set_item("data", (self.bytes.as_ptr() as usize, true))?;
        Ok(interface)
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }
}

/// Every stored tile of the array `uri` (`ArrayTree::stored_tiles`): per fragment and
/// fixed-size stored field, `(fragment, field, folder name, validity, tiles)`, each
/// tile `(url, offset, length, fragfs_tile configuration as JSON text)`. Encrypted
/// tiles raise `ValueError` (no reference carries a key).
#[pyfunction]
#[pyo3(signature = (
    uri,
    *,
    endpoint_url = None,
    region = None,
    profile = None,
    no_sign_request = false,
    virtual_hosted = None,
    access_key_id = None,
    secret_access_key = None,
    retry_timeout = None,
    encryption_key = None,
))]
#[allow(clippy::too_many_arguments)]
pub fn stored_tiles(
    py: Python<'_>,
    uri: String,
    endpoint_url: Option<String>,
    region: Option<String>,
    profile: Option<String>,
    no_sign_request: bool,
    virtual_hosted: Option<bool>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    retry_timeout: Option<f64>,
    encryption_key: Option<String>,
) -> PyResult<Vec<FieldTiles>> {
    let s3 = S3Args {
        endpoint_url,
        region,
        profile,
        no_sign_request,
        virtual_hosted,
        access_key_id,
        secret_access_key,
        retry_timeout,
    }
    .options()?;
    let options = open_options(encryption_key.as_deref())?;
    let fields = py
        .detach(|| {
            let tree = open_array(
                Path::new(&uri),
                &s3,
                options,
                fragfs::view::DEFAULT_CACHE_SIZE,
            )?;
            tree.stored_tiles()
        })
        .map_err(to_py)?;
    fields
        .into_iter()
        .map(|f| {
            let tiles = f
                .tiles
                .into_iter()
                .map(|t| match t.encrypted {
                    true => Err(PyValueError::new_err(format!(
                        "{}: an encrypted tile: no reference carries its key",
                        t.place
                    ))),
                    false => Ok((t.url(), t.offset, t.len, t.codec.to_json().to_string())),
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok((f.fragment, f.field, f.shown, f.validity, tiles))
        })
        .collect()
}

/// One field's tiles, as `stored_tiles` hands them to Python.
type FieldTiles = (
    String,
    String,
    String,
    bool,
    Vec<(String, u64, u64, String)>,
);
