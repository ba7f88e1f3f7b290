//! How to mount, from the command line: the options a mount takes and the fuser
//! configuration they make.

use fuser::{Config, MountOption, SessionACL};

/// The kernel read-ahead `fragfs mount` sets by default (`--read-ahead`). The kernel
/// sends a window in requests of at most 1 MiB, one per thread that serves it: with
/// 2 MiB a sequential reader keeps two threads decoding where 1 MiB kept one (a merged
/// `values.bin` read whole by `cat`: 0.384 s against 0.436 s; `array.nc` read 8 KiB at
/// a time: 0.495 s against 0.534 s; medians of 6, scripts/bench/README.md). The window
/// is also the read-around of a memory-mapped reader's page faults: a random fault
/// decodes 2 MiB (in two requests, so no slower, but with more work than 1 MiB).
pub const DEFAULT_READ_AHEAD: u64 = 2 << 20;

/// How to mount, from the command line.
#[derive(Debug, Clone)]
pub struct MountConfig {
    /// Let other users (`allow_other`) or root (`allow_root`) in; default: only the
    /// mounting user.
    pub allow_other: bool,
    pub allow_root: bool,
    /// Unmount when the daemon dies (needs `fusermount3`, as FUSE implements it there).
    pub auto_unmount: bool,
    /// Threads serving requests, and as many reading ahead.
    pub threads: usize,
    /// How far the kernel reads ahead of a sequential reader, in bytes, when fragfs may
    /// set it (root); 0 leaves the kernel's default.
    pub read_ahead: u64,
    /// End the process as soon as the kernel lets the mount go. fuser's own cleanup
    /// would then unmount the mount point again, by path: after `fragfs umount` that
    /// path may already hold a new mount, which it would take down. Daemons set this;
    /// mounts inside another program (tests) cannot.
    pub exit_on_unmount: bool,
    /// Ask the kernel for FUSE passthrough: files complete in the disk cache are then
    /// read by the kernel from the cache file, without a request to the daemon.
    pub passthrough: bool,
}

/// The fuser configuration for `cfg`: read-only, private unless asked, named `fragfs`.
pub fn fuse_config(cfg: &MountConfig) -> Config {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::FSName("fragfs".into()),
        MountOption::Subtype("fragfs".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::NoAtime,
        MountOption::DefaultPermissions,
    ];
    if cfg.auto_unmount {
        config.mount_options.push(MountOption::AutoUnmount);
    }
    config.acl = if cfg.allow_other {
        SessionACL::All
    } else if cfg.allow_root {
        SessionACL::RootAndOwner
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(cfg.threads.max(1));
    config
}
