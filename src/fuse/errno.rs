//! View errors as errnos for the kernel, the unexpected ones logged once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use fuser::Errno;

use crate::error::Error;
use crate::view::Ino;

/// The errno for a view error; unexpected ones (bad data, I/O) are logged with the
/// message that names fragment, file, tile and chunk.
pub fn errno(e: &Error, ino: Ino, op: &str) -> Errno {
    let code = e.errno();
    if code == libc::EIO {
        let message = e.to_string();
        if !repeated(ino, &message) {
            log::error!("{op} inode {ino}: {message}");
        }
    } else {
        log::debug!("{op} inode {ino}: {e}");
    }
    Errno::from_i32(code)
}

/// Whether the same error of the same node was logged a moment ago. The kernel often
/// asks twice for what failed once (a lookup then its revalidation, a read-ahead then
/// the page itself): one failure is one log line.
fn repeated(ino: Ino, message: &str) -> bool {
    const WINDOW: Duration = Duration::from_secs(2);
    static RECENT: Mutex<Vec<(Ino, String, Instant)>> = Mutex::new(Vec::new());
    let now = Instant::now();
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    recent.retain(|(_, _, at)| now.duration_since(*at) < WINDOW);
    if recent.iter().any(|(n, m, _)| *n == ino && m == message) {
        return true;
    }
    recent.push((ino, message.to_string(), now));
    false
}
