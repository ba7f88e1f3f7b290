//! View errors as errnos for the kernel, the unexpected ones logged once.

use std::collections::VecDeque;
use std::sync::Mutex;

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

/// Whether the same error of the same node was logged already. The kernel often asks
/// again for what failed once (a lookup then its revalidation, a read-ahead then the
/// page itself, a stat seconds later on a loaded machine): one failure is one log line.
/// The memory is of the last [`REMEMBERED`] distinct failures, not of a time window, so
/// how fast the kernel asks again never changes what is logged; a failure pushed out by
/// as many others is logged again when it comes back.
fn repeated(ino: Ino, message: &str) -> bool {
    static LOGGED: Mutex<VecDeque<(Ino, String)>> = Mutex::new(VecDeque::new());
    let mut logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    if logged.iter().any(|(n, m)| *n == ino && m == message) {
        return true;
    }
    if logged.len() == REMEMBERED {
        logged.pop_front();
    }
    logged.push_back((ino, message.to_string()));
    false
}

/// Distinct failures remembered by [`repeated`]: a few hundred kilobytes of messages at
/// most.
const REMEMBERED: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_logged_once_however_late_it_is_asked_again() {
        // Inodes no other test uses.
        let ino = u64::MAX - 7;
        assert!(!repeated(ino, "tile 2: bad"));
        assert!(repeated(ino, "tile 2: bad"));
        assert!(!repeated(ino, "tile 3: bad"), "another failure of the node");
        assert!(
            !repeated(ino - 1, "tile 2: bad"),
            "the same failure of another node"
        );
        // Pushed out by as many other failures, it is logged again.
        for k in 0..REMEMBERED as u64 {
            repeated(ino - 2 - k, "filler");
        }
        assert!(!repeated(ino, "tile 2: bad"));
    }
}
