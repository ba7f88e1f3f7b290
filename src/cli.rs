//! Command-line parsing. No logic beyond turning arguments into calls of the library.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "fragfs",
    version,
    about = "See every fragment of a TileDB array as plain decoded files"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output (repeat for more); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Append log lines to this file instead of stderr (a daemon has no stderr).
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ArrayArgs {
    /// The TileDB array folder.
    pub array: PathBuf,
    /// AES-256-GCM key of an encrypted array (32 bytes of text, or 64 hex digits).
    #[arg(long, env = "FRAGFS_ENCRYPTION_KEY", hide_env_values = true)]
    pub encryption_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the virtual tree.
    Ls {
        #[command(flatten)]
        array: ArrayArgs,
        /// Folder (or file) of the tree to list.
        #[arg(default_value = "/")]
        path: String,
        /// Long listing: type and exact size.
        #[arg(short, long)]
        long: bool,
        /// List sub-folders recursively.
        #[arg(short = 'R', long)]
        recursive: bool,
    },
    /// Write one virtual file to stdout.
    Cat {
        #[command(flatten)]
        array: ArrayArgs,
        /// Path of the file in the tree, e.g. fragments/<fragment>/<field>/values.bin
        path: String,
    },
    /// A readable summary of the array and its fragments.
    Info {
        #[command(flatten)]
        array: ArrayArgs,
    },
    /// Mount the array read-only with FUSE; returns once the mount is live.
    Mount {
        #[command(flatten)]
        array: ArrayArgs,
        /// An existing, empty folder.
        mountpoint: PathBuf,
        /// Stay in the foreground (logs to stderr); Ctrl-C unmounts.
        #[arg(short, long)]
        foreground: bool,
        /// Mount options, comma-separated: allow_other, allow_root, auto_unmount (and
        /// ro, which is always on).
        #[arg(short = 'o', value_name = "OPTIONS", value_delimiter = ',')]
        options: Vec<String>,
        /// Threads serving requests (and as many decoding ahead); default: the cores.
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Bound of the decoded-chunk cache: bytes, or with K, M, G (powers of 1024).
        #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size)]
        cache_size: u64,
    },
    /// Unmount a fragfs mount (lazily, with a message, when files are still open).
    Umount { mountpoint: PathBuf },
}

/// `256M`, `1G`, `65536`, `64MiB`: a byte count with an optional binary unit.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 256M)"))?;
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{text:?}: unknown unit (use K, M, G or T)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_with_binary_units() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2KB"), Ok(2048));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
