//! Process plumbing for the mount daemon: forking into the background with a pipe that
//! carries the child's "mounted" (or the reason it failed) back to the waiting parent,
//! and waiting for SIGINT/SIGTERM/SIGHUP on a thread of our own; and what both edges'
//! daemons (`fragfs mount` and `fragfs serve`) share: the grace running requests get
//! after a signal, and the allocator's bound on heap arenas.
//!
//! Why a pipe: `fragfs mount` must return only once the mount is live, and must fail
//! with the real reason (bad array, busy mount point...) rather than a daemon that dies
//! silently after the shell prompt is back.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};

/// How long requests still running after SIGINT/SIGTERM/SIGHUP may take before the
/// daemon ends regardless (a mount's requests, `fragfs serve`'s connections).
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// glibc gives each thread its own heap arena and keeps what was freed in it: with FUSE
/// workers and read-ahead threads all churning chunk- and reply-sized buffers, that held
/// tens of MiB beyond the cache (the benchmark's peak RSS went from ~150 to ~100 MiB with
/// one arena). Two arenas keep that bounded and still spare the threads most contention.
/// `fragfs serve` calls it too, for its blocking pool's threads. Call it before the
/// process starts any thread.
pub fn limit_heap_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before the daemon
    // starts any thread, and a refused value leaves glibc's default in place.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// What the parent reads when the mount is live.
const MOUNTED: &str = "mounted";

/// The child's end of the pipe to the waiting parent.
pub struct Reporter {
    pipe: File,
}

impl Reporter {
    /// Tells the parent the mount is live; it exits 0.
    pub fn mounted(mut self) {
        let _ = self.pipe.write_all(MOUNTED.as_bytes());
    }

    /// Tells the parent why mounting failed; it prints that one line and exits 1.
    pub fn failed(mut self, reason: &str) {
        let _ = self.pipe.write_all(reason.as_bytes());
    }
}

/// Forks. In the parent this never returns: it waits for the child's report and exits.
/// In the child it returns the [`Reporter`], with the child in a new session.
///
/// # Safety
///
/// The process must have a single thread when this is called: only the calling thread
/// survives a fork, and a lock another thread held (the allocator's, a logger's) would
/// stay locked forever in the child, which goes on running arbitrary Rust code.
pub unsafe fn daemonize() -> io::Result<Reporter> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors that nothing else owns.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the caller guarantees a single-threaded process (this function's contract),
    // the one case in which the child may go on running arbitrary Rust code after fork.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(read_end);
            // SAFETY: setsid has no memory effects; failing (already a group leader)
            // is harmless, the child just keeps its session.
            unsafe { libc::setsid() };
            Ok(Reporter {
                pipe: File::from(write_end),
            })
        }
        _child => {
            drop(write_end);
            let mut report = String::new();
            let _ = File::from(read_end).read_to_string(&mut report);
            if report == MOUNTED {
                std::process::exit(0);
            }
            let reason = if report.is_empty() {
                "the mount daemon exited before the mount was live (run with -f to see why)"
            } else {
                report.as_str()
            };
            eprintln!("fragfs: {reason}");
            std::process::exit(1);
        }
    }
}

/// Points stdin, stdout and stderr at /dev/null, so the daemon holds no terminal.
pub fn detach_stdio() -> io::Result<()> {
    let null = File::options().read(true).write(true).open("/dev/null")?;
    for fd in 0..3 {
        // SAFETY: dup2 onto the standard descriptors; `null` stays open for the call.
        if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signals that end a mount.
pub struct Signals {
    set: libc::sigset_t,
}

impl Signals {
    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every thread
    /// it starts afterwards: call it before starting any, then [`Signals::wait`] on one.
    pub fn block() -> io::Result<Signals> {
        // SAFETY: a zeroed sigset_t is a valid value to hand to sigemptyset, and every
        // call below only reads or writes that local set and the thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            Ok(Signals { set })
        }
    }

    /// Waits for one of the signals and returns it.
    pub fn wait(&self) -> io::Result<i32> {
        let mut sig = 0;
        // SAFETY: `self.set` was built by `block`; `sig` is a valid int to write.
        let rc = unsafe { libc::sigwait(&self.set, &mut sig) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(sig)
    }
}
