//! The cache folder as a private place: the daemon (often root) writes files there and
//! later hands some of them to the kernel to serve, so nobody else may have a say in
//! what the folder holds.
//!
//! - The folder must belong to the daemon's user and be writable by nobody else
//!   ([`check_folder`]): otherwise another user could plant a file that is served as a
//!   decoded array file, or a symbolic link that makes the daemon (as root) write, truncate
//!   or hand over a file elsewhere. A folder that fails the check is not used at all.
//! - Every file of the folder is opened without following a symbolic link as its last
//!   component (`O_NOFOLLOW`, [`open`], [`create_new`]), and must be a regular file: a
//!   link planted in the folder (by the owner, or by anyone before the folder was made
//!   private) makes that open fail instead of reaching the link's target. The folders on
//!   the way are the cache's own, made 0700 in a folder only the owner can write.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Why a cache folder is not used, for the one log line that says so.
pub fn check_folder(dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    if !meta.is_dir() {
        return Err(format!("{}: not a folder", dir.display()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "{}: owned by uid {}, not by this daemon's user (uid {me}): another user could \
             plant the bytes it serves",
            dir.display(),
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "{}: writable by {} (mode {mode:o}): another user could plant the bytes it serves \
             (chmod go-w, or better 0700)",
            dir.display(),
            if mode & 0o002 != 0 {
                "others"
            } else {
                "its group"
            }
        ));
    }
    Ok(())
}

/// The error an open gives for a symbolic link in its place (`O_NOFOLLOW`), or a file
/// that is not a regular one.
pub fn is_link(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

fn not_regular(path: &Path) -> std::io::Error {
    std::io::Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{}: not a regular file: the disk cache does not use it",
            path.display()
        ),
    )
}

/// Only a regular file is ever used (a FIFO or a device planted in the folder is not).
fn regular(file: File, path: &Path) -> std::io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(not_regular(path))
    }
}

/// Opens an existing file of the folder, read and write, never through a symbolic link.
pub fn open(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    regular(file, path)
}

/// Opens an existing file of the folder read-only, never through a symbolic link.
pub fn open_read(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    regular(file, path)
}

/// Makes a new file (0600) where none is: `O_CREAT | O_EXCL` fails on anything already
/// there, a symbolic link included (which it never follows).
pub fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Opens the file, making it (0600) if it is absent; a symbolic link or anything but a
/// regular file in its place is removed (with a log line) and the file made anew. For
/// the folder's own files (its lock, its usage count), which hold nothing worth keeping
/// from a planted file.
pub fn open_or_create(path: &Path) -> std::io::Result<File> {
    let opened = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|f| regular(f, path));
    match opened {
        Ok(f) => Ok(f),
        Err(e) if is_link(&e) || e.kind() == ErrorKind::InvalidInput => {
            log::warn!(
                "disk cache: {}: a symbolic link or not a regular file: not followed, made anew",
                path.display()
            );
            std::fs::remove_file(path)?;
            create_new(path)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_a_folder_of_this_user_writable_by_nobody_else_passes() {
        let dir = tempfile::tempdir().unwrap();
        let check = |mode: u32| {
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            check_folder(dir.path(), &std::fs::metadata(dir.path()).unwrap())
        };
        assert!(check(0o700).is_ok());
        assert!(check(0o755).is_ok(), "readable by others: allowed");
        assert!(check(0o770).unwrap_err().contains("its group"));
        assert!(check(0o707).unwrap_err().contains("others"));
        check(0o700).unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_folder(&file, &std::fs::metadata(&file).unwrap()).is_err());
    }

    #[test]
    fn links_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep me").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(is_link(&open(&link).unwrap_err()));
        assert!(is_link(&open_read(&link).unwrap_err()));
        assert!(create_new(&link).is_err());
        // The folder's own files: the link goes, a file is made in its place.
        let f = open_or_create(&link).unwrap();
        assert!(f.metadata().unwrap().is_file());
        assert!(!std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    }
}
