//! fragfs errors as Python exceptions: the errno `fragfs cat` and the mount would give,
//! and the message as fragfs words it (naming the fragment, file or tile).

use pyo3::exceptions::{PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyOSError};
use pyo3::PyErr;

/// `ENOENT` is `FileNotFoundError`, `EISDIR` `IsADirectoryError`, `ENOTDIR`
/// `NotADirectoryError`; any other errno an `OSError(errno, message)` (which Python
/// itself makes a `PermissionError` for `EACCES`: a missing or wrong key).
pub fn to_py(e: fragfs::Error) -> PyErr {
    let errno = e.errno();
    let args = (errno, e.to_string());
    match errno {
        libc::ENOENT => PyFileNotFoundError::new_err(args),
        libc::EISDIR => PyIsADirectoryError::new_err(args),
        libc::ENOTDIR => PyNotADirectoryError::new_err(args),
        _ => PyOSError::new_err(args),
    }
}
