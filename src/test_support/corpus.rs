//! Tests that read the shared corpus of real arrays, which lives beside the repository
//! and may be absent on a developer's machine. A silent pass would hide that nothing
//! was checked, so a skip is said and logged, and where the corpus must be there (CI
//! sets `FRAGFS_REQUIRE_CORPUS`) its absence fails the test. Same rules as
//! `tests/common/mod.rs` `shared_or_skip` and `skip`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The shared corpus's TileDB arrays (`../shared/corpus/tiledb`) when the folder
/// exists; otherwise `None`, with the skip printed and appended to the file
/// `FRAGFS_SKIP_LOG` names. Panics instead when `FRAGFS_REQUIRE_CORPUS` is set.
pub fn shared_corpus_or_skip() -> Option<PathBuf> {
    present_or_skip(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/tiledb"),
        std::env::var_os("FRAGFS_REQUIRE_CORPUS").is_some(),
        std::env::var_os("FRAGFS_SKIP_LOG"),
    )
}

/// `dir` when it exists; otherwise a failure if `required`, else `None` after a skip
/// logged to `skip_log`. The environment is read by the caller, so this can be tested
/// without changing the process's.
fn present_or_skip(dir: PathBuf, required: bool, skip_log: Option<OsString>) -> Option<PathBuf> {
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        !required,
        "FRAGFS_REQUIRE_CORPUS is set but {} is absent",
        dir.display()
    );
    skip(
        &format!(
            "{} is absent (the shared corpus lives beside the repo)",
            dir.display()
        ),
        skip_log,
    );
    None
}

/// Says a check was skipped, and why: printed (libtest shows it with `--nocapture` or
/// on failure) and appended, after the test's name, to `log` (scripts/test.sh counts
/// the skips from that file and lists their reasons).
fn skip(reason: &str, log: Option<OsString>) {
    println!("SKIP: {reason}");
    if let Some(log) = log {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let test = std::thread::current().name().unwrap_or("?").to_string();
            let _ = writeln!(f, "{test}: {reason}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn absent() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("no such corpus")
    }

    #[test]
    fn an_absent_corpus_is_a_logged_skip() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips");
        assert_eq!(
            present_or_skip(absent(), false, Some(log.clone().into())),
            None
        );
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(
            logged.starts_with("test_support::corpus::tests::an_absent_corpus_is_a_logged_skip: ")
                && logged.contains("no such corpus is absent")
                && logged.ends_with('\n'),
            "{logged:?}"
        );
    }

    #[test]
    #[should_panic(expected = "FRAGFS_REQUIRE_CORPUS is set")]
    fn an_absent_corpus_fails_where_it_is_required() {
        present_or_skip(absent(), true, None);
    }

    #[test]
    fn a_present_corpus_is_used() {
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(present_or_skip(here.clone(), true, None), Some(here));
    }
}
