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
}
