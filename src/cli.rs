//! Command-line parsing. No logic beyond turning arguments into calls of the library.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use fragfs::filo::{ColumnType, FormatVersion};
use fragfs::secret::Secret;
use fragfs::storage::s3::S3Options;
use fragfs::view::ChunkOptions;

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
    /// The TileDB array: a folder, or s3://bucket/path/to/array in S3-compatible object
    /// storage.
    pub array: PathBuf,
    #[command(flatten)]
    pub s3: S3Args,
    /// AES-256-GCM key of an encrypted array (32 bytes of text, or 64 hex digits).
    #[arg(long, env = "FRAGFS_ENCRYPTION_KEY", hide_env_values = true)]
    pub encryption_key: Option<String>,
    /// When the path is a lone Filo chunk file: its column type (bool, int, long, float,
    /// double, string, utf8, timestamp, datetime). A Filo fragment folder needs none: its
    /// filo_fragment.json names every column's type.
    #[arg(long, value_name = "TYPE", value_parser = parse_filo_type)]
    pub filo_type: Option<ColumnType>,
    /// A lone Filo chunk's writer: velvia-filo-0.3 (0.3.2 and later, the default) or
    /// velvia-filo-0.3.0 (0.3.0-0.3.1, whose short UTF8Vector strings differ).
    #[arg(long, value_name = "VERSION", value_parser = parse_filo_version)]
    pub filo_version: Option<FormatVersion>,
    #[command(flatten)]
    pub disk_cache: DiskCacheArgs,
}

/// The persistent cache of decoded bytes (README: "The disk cache").
#[derive(Debug, Args, Default)]
pub struct DiskCacheArgs {
    /// Keep the decoded bytes of the files read in this folder (made 0700), across
    /// mounts: later reads (and mounts) serve them from there, complete files by FUSE
    /// passthrough where the kernel and privileges allow. The folder must belong to this
    /// user and be writable by nobody else: one that is not, or cannot be made or
    /// written, is not used (the log says why) and reads go on without it.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Bound of --cache-dir (least recently used files go first), held by every daemon
    /// that uses the folder together: bytes, or with K, M, G; default: 1/10 of the free
    /// space, at most 10G. The disk always keeps 5% (at most 1G) free.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "cache_dir")]
    pub cache_dir_size: Option<u64>,
    /// Keep the decrypted bytes of encrypted arrays in --cache-dir too (by default
    /// their files are not cached).
    #[arg(long, requires = "cache_dir")]
    pub cache_decrypted: bool,
}

impl DiskCacheArgs {
    pub fn config(&self) -> Option<fragfs::storage::diskcache::CacheConfig> {
        self.cache_dir
            .as_ref()
            .map(|dir| fragfs::storage::diskcache::CacheConfig {
                dir: dir.clone(),
                size: self.cache_dir_size,
                decrypted: self.cache_decrypted,
            })
    }

    /// Takes a `-o` option of the disk cache; false if `option` is not one.
    pub fn set_option(&mut self, option: &str) -> Result<bool, String> {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        match key {
            "cache_dir" if !value.is_empty() => self.cache_dir = Some(value.into()),
            "cache_dir_size" => self.cache_dir_size = Some(parse_size(value)?),
            "cache_decrypted" => self.cache_decrypted = true,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// How to reach an s3:// array. Credentials come as the AWS CLI finds them: the
/// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN variables, the profiles
/// of ~/.aws/credentials and ~/.aws/config, then web-identity, container or instance
/// credentials.
#[derive(Debug, Args, Default)]
pub struct S3Args {
    /// An S3-compatible server (Garage, Ceph RGW, MinIO), e.g. http://127.0.0.1:3900;
    /// default: AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS S3 itself.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// The bucket's region; default: AWS_REGION, the profile's, else us-east-1.
    #[arg(long)]
    pub region: Option<String>,
    /// A profile of ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE, else
    /// "default").
    #[arg(long)]
    pub profile: Option<String>,
    /// Send anonymous requests (a public bucket).
    #[arg(long)]
    pub no_sign_request: bool,
    /// `path` (host/bucket/key) or `virtual` (bucket.host/key); default: path with
    /// --endpoint-url, virtual on AWS.
    #[arg(long, value_name = "STYLE", value_parser = parse_addressing)]
    pub addressing: Option<bool>,
    /// How long a failing request (5xx, throttling, connection reset) is retried before
    /// the read fails with EIO: seconds, or with ms, s, m.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub retry_timeout: Option<std::time::Duration>,
}

impl S3Args {
    pub fn options(&self) -> S3Options {
        S3Options {
            endpoint_url: self.endpoint_url.clone(),
            region: self.region.clone(),
            profile: self.profile.clone(),
            no_sign_request: self.no_sign_request,
            virtual_hosted: self.addressing,
            retry_timeout: self.retry_timeout,
            keys: None,
        }
    }

    /// Takes an `-o` mount option meant for object storage; `Ok(false)` when `option`
    /// is not one.
    pub fn set_option(&mut self, option: &str) -> Result<bool, String> {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        let needs = |v: &str| {
            if v.is_empty() {
                Err(format!("mount option {key} needs a value ({key}=...)"))
            } else {
                Ok(v.to_string())
            }
        };
        match key {
            "endpoint_url" | "endpoint" => self.endpoint_url = Some(needs(value)?),
            "region" => self.region = Some(needs(value)?),
            "profile" => self.profile = Some(needs(value)?),
            "no_sign_request" => self.no_sign_request = true,
            "addressing" => self.addressing = Some(parse_addressing(value)?),
            "retry_timeout" => self.retry_timeout = Some(parse_duration(value)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// `path` or `virtual` addressing: whether the bucket goes in the host name.
fn parse_addressing(text: &str) -> Result<bool, String> {
    match text {
        "path" => Ok(false),
        "virtual" => Ok(true),
        _ => Err(format!("{text:?}: addressing is path or virtual")),
    }
}

/// `15`, `15s`, `500ms`, `2m`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 15s)"))?;
    Ok(match unit {
        "" | "s" => std::time::Duration::from_secs(n),
        "ms" => std::time::Duration::from_millis(n),
        "m" => std::time::Duration::from_secs(n * 60),
        _ => return Err(format!("{text:?}: unknown unit (ms, s or m)")),
    })
}

impl ArrayArgs {
    pub fn chunk_options(&self) -> ChunkOptions {
        ChunkOptions {
            column_type: self.filo_type,
            version: self.filo_version.unwrap_or_default(),
        }
    }
}

fn parse_filo_version(name: &str) -> Result<FormatVersion, String> {
    FormatVersion::from_name(name).ok_or_else(|| {
        format!("unknown Filo version {name:?} (velvia-filo-0.3 or velvia-filo-0.3.0)")
    })
}

fn parse_filo_type(name: &str) -> Result<ColumnType, String> {
    ColumnType::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = ColumnType::ALL.iter().map(|t| t.name()).collect();
        format!("unknown Filo type {name:?} (one of {})", known.join(", "))
    })
}

// Parsed once per run: a command's size does not matter, boxing its fields would.
#[allow(clippy::large_enum_variant)]
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
        /// ro, which is always on); for s3:// arrays also endpoint_url=URL, region=R,
        /// profile=P, no_sign_request, addressing=path|virtual, retry_timeout=T; and the
        /// disk cache's cache_dir=DIR, cache_dir_size=SIZE, cache_decrypted.
        #[arg(short = 'o', value_name = "OPTIONS", value_delimiter = ',')]
        options: Vec<String>,
        /// Threads serving requests (and as many reading ahead); default: the cores.
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Bound of the caches (decoded chunks, and 1/8 of it for rendered files and text
        /// indexes): bytes, or with K, M, G (powers of 1024). A result larger than its
        /// cache is kept on disk instead (unlinked files in $TMPDIR, as many bytes as
        /// this, or that one result alone). Bounded apart: parsed fragment metadata (a
        /// cache of 256 MiB of metadata files, least recently used out) and the inode
        /// table (the inodes the kernel holds, plus 65,536 idle ones).
        #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size)]
        cache_size: u64,
        /// How far the kernel reads ahead of sequential readers of the mount (set when
        /// mounting as root; others keep the kernel's 128K); 0 leaves the default.
        #[arg(long, value_name = "SIZE", default_value = "2M", value_parser = parse_size)]
        read_ahead: u64,
    },
    /// Write a kerchunk reference set (version 1) of the Zarr v2 store of a dense array
    /// (zarr/, or at/<T>/zarr/ with --at): zarr-python, xarray and Dask then read the
    /// chunks through fsspec's reference:// straight from the fragments' files (with the
    /// fragfs Python package's fragfs_tile codec, or standard numcodecs codecs where the
    /// tiles are one ZSTD, GZIP or BYTESHUFFLE+ZSTD chunk). Chunks that are merges of
    /// fragments are given inline (--inline-limit) or as URLs of a `fragfs serve`
    /// (--serve-url); if one can be neither, nothing is written and each such chunk is
    /// named, with why. A summary line goes to stderr.
    Refs {
        /// The TileDB array: a folder, or s3://bucket/path/to/array.
        array: PathBuf,
        #[command(flatten)]
        s3: S3Args,
        /// AES-256-GCM key of an encrypted array (32 bytes of text, or 64 hex digits):
        /// its tiles are never referenced (a reference carries no key), merged chunks
        /// are given decrypted, inline or served.
        #[arg(long, env = "FRAGFS_ENCRYPTION_KEY", hide_env_values = true)]
        encryption_key: Option<String>,
        /// The state at this timestamp (ms since the epoch), as at/<T>/zarr/; default
        /// the latest.
        #[arg(long, value_name = "T")]
        at: Option<u64>,
        /// Write the reference set to this file instead of stdout.
        #[arg(short, long, value_name = "FILE.json")]
        output: Option<PathBuf>,
        /// The URL of a running `fragfs serve --http` of the same array: chunks too large
        /// to inline are referenced to its zarr/ files.
        #[arg(long, value_name = "URL")]
        serve_url: Option<String>,
        /// Chunks that are merges of fragments are given inline up to this many decoded
        /// bytes (K, M, G; 0: none).
        #[arg(long, value_name = "BYTES", default_value = "64K", value_parser = parse_size)]
        inline_limit: u64,
    },
    /// Unmount a fragfs mount (lazily, with a message, when files are still open).
    Umount { mountpoint: PathBuf },
    /// Serve the tree a mount shows over the network, in the foreground, until
    /// SIGINT/SIGTERM: over HTTP (127.0.0.1:8080 unless another door is named), WebDAV,
    /// the S3 API and NFSv3.
    /// Prints one line per door, `<door> <url>`, once it listens.
    Serve {
        #[command(flatten)]
        array: ArrayArgs,
        /// Serve HTTP (GET/HEAD with ranges, folder listings) on this address.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Serve read-only WebDAV (for Finder, Explorer, davfs2, rclone) on this address.
        #[arg(long, value_name = "ADDR")]
        webdav: Option<std::net::SocketAddr>,
        /// Serve a read-only NFSv3 export (NFS, MOUNT and a portmapper on this one
        /// port); NFSv3 has no authentication, so beyond loopback only with
        /// --insecure-listen.
        #[arg(long, value_name = "ADDR")]
        nfs: Option<std::net::SocketAddr>,
        /// Required from HTTP and WebDAV clients, as a bearer token or a basic-auth
        /// password (any user name): at least 16 bytes. On a command line `ps` shows
        /// it: prefer --token-file or FRAGFS_TOKEN.
        #[arg(long, env = "FRAGFS_TOKEN", hide_env_values = true, value_parser = parse_secret)]
        token: Option<Secret>,
        /// A file holding the token (its first line end dropped), e.g. a Kubernetes
        /// secret.
        #[arg(long, value_name = "FILE", conflicts_with = "token")]
        token_file: Option<PathBuf>,
        /// Serve the S3 API (one read-only bucket) on this address.
        #[arg(long = "s3", value_name = "ADDR")]
        s3_api: Option<std::net::SocketAddr>,
        /// The S3 API's bucket name; default: the array folder's name made a valid
        /// bucket name (lowercase, [a-z0-9.-], 3-63 characters).
        #[arg(long, value_name = "NAME")]
        bucket: Option<String>,
        /// Answer virtual-hosted-style S3 requests too, to hosts named
        /// <bucket>.<DOMAIN> (path-style requests are answered whatever the host).
        #[arg(long, value_name = "DOMAIN")]
        s3_domain: Option<String>,
        /// The access key S3 clients sign with (SigV4), at least 16 bytes; with
        /// --s3-secret-key-file (or --s3-secret-key).
        #[arg(long, env = "FRAGFS_S3_ACCESS_KEY")]
        s3_access_key: Option<String>,
        /// The secret key S3 clients sign with, at least 16 bytes; `ps` shows a command
        /// line: prefer --s3-secret-key-file or FRAGFS_S3_SECRET_KEY.
        #[arg(
            long,
            env = "FRAGFS_S3_SECRET_KEY",
            hide_env_values = true,
            value_parser = parse_secret,
            requires = "s3_access_key"
        )]
        s3_secret_key: Option<Secret>,
        /// A file holding the S3 secret key (its first line end dropped).
        #[arg(
            long,
            value_name = "FILE",
            conflicts_with = "s3_secret_key",
            requires = "s3_access_key"
        )]
        s3_secret_key_file: Option<PathBuf>,
        /// Allow listening beyond loopback without an access control.
        #[arg(long)]
        insecure_listen: bool,
        /// A name clients may reach a listener without an access control by (sent as
        /// `Host`), besides localhost, 127.0.0.1 and [::1] (and, beyond loopback, IP
        /// addresses); others are refused (403), so a web page cannot rebind its own
        /// name to this server. A leading `.` allows a domain and every name below it.
        /// Repeat for more.
        #[arg(long, value_name = "NAME")]
        allowed_host: Vec<String>,
        /// An origin (`https://vitessce.io`) whose web pages may read the HTTP, WebDAV
        /// and S3 answers (CORS); `*` for every origin, which needs --token (or S3
        /// keys). Repeat for more. Without it no CORS header is sent.
        #[arg(long, value_name = "ORIGIN")]
        cors_origin: Vec<String>,
        /// Serve HTTPS on the HTTP, WebDAV and S3 addresses: the certificate chain (PEM),
        /// with --tls-key.
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The private key of --tls-cert (PEM).
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Connections served at once, every door together (more wait in the listen
        /// backlog).
        #[arg(long, value_name = "N", default_value_t = 1024)]
        max_connections: usize,
        /// Connections served at once from one client address (more are closed at once,
        /// an HTTP client first told 503).
        #[arg(long, value_name = "N", default_value_t = 256)]
        max_connections_per_client: usize,
        /// Threads reading the tree, and as many serving the network; default: the cores.
        #[arg(long, value_name = "N")]
        threads: Option<usize>,
        /// Bound of the caches, as for `mount`. Apart from it, the answers in flight
        /// hold at most 64 MiB (every door together).
        #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = parse_size)]
        cache_size: u64,
    },
}

/// Options of `mount(8)` and fstab that mean nothing to a read-only FUSE mount (or that
/// `mount` itself handles), accepted and dropped so any usual fstab line works.
const GENERIC_MOUNT_OPTIONS: &[&str] = &[
    "ro",
    "rw",
    "defaults",
    "auto",
    "noauto",
    "user",
    "users",
    "nouser",
    "owner",
    "group",
    "nofail",
    "_netdev",
    "dev",
    "nodev",
    "suid",
    "nosuid",
    "exec",
    "noexec",
    "atime",
    "noatime",
    "relatime",
    "strictatime",
    "nodiratime",
    "sync",
    "async",
    "silent",
    "loud",
    "default_permissions",
];

/// The `mount(8)` helper calling convention, `mount.fragfs SOURCE TARGET [-o OPTS]
/// [-n] [-s] [-f] [-v]` (as `mount -t fuse.fragfs` and `/etc/fstab` call it through
/// `mount.fuse3` or a `mount.fuse.fragfs` link), turned into the arguments of `fragfs
/// mount`. `None` when `args` are an ordinary fragfs command line; `Some(Err)` for a
/// helper call with an option fragfs does not know. A "fake" mount (`-f`) becomes `None`
/// inside `Some(Ok(None))`: nothing to do.
pub fn from_mount_helper(args: &[OsString]) -> Option<Result<Option<Vec<OsString>>, String>> {
    let program = args.first()?.to_string_lossy().into_owned();
    let program = program.rsplit('/').next().unwrap_or_default();
    let helper_name =
        program.starts_with("mount.fragfs") || program.starts_with("mount.fuse.fragfs");
    let first = args.get(1)?.to_string_lossy().into_owned();
    let subcommand = first == "help"
        || <Cli as clap::CommandFactory>::command()
            .get_subcommands()
            .any(|c| c.get_name() == first);
    let looks_like_helper = !first.starts_with('-') && !subcommand;
    (helper_name || looks_like_helper && args.len() >= 3).then(|| helper_arguments(&args[1..]))
}

fn helper_arguments(args: &[OsString]) -> Result<Option<Vec<OsString>>, String> {
    let mut positional = Vec::new();
    let mut out: Vec<OsString> = vec!["fragfs".into(), "mount".into()];
    let mut fuse_options = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("-o") => {
                let opts = rest.next().ok_or("-o needs options")?;
                for opt in opts.to_string_lossy().split(',').map(str::trim) {
                    let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
                    match key {
                        "" => {}
                        "allow_other" | "allow_root" | "auto_unmount" => {
                            fuse_options.push(key.to_string())
                        }
                        "cache_size" => out.extend(["--cache-size".into(), value.into()]),
                        "cache_dir" => out.extend(["--cache-dir".into(), value.into()]),
                        "cache_dir_size" => out.extend(["--cache-dir-size".into(), value.into()]),
                        "cache_decrypted" => out.push("--cache-decrypted".into()),
                        "threads" => out.extend(["--threads".into(), value.into()]),
                        "read_ahead" => out.extend(["--read-ahead".into(), value.into()]),
                        "log_file" => out.extend(["--log-file".into(), value.into()]),
                        "encryption_key" => out.extend(["--encryption-key".into(), value.into()]),
                        "verbose" => out.push("-v".into()),
                        "endpoint_url" | "endpoint" | "region" | "profile" | "no_sign_request"
                        | "addressing" | "retry_timeout" => fuse_options.push(opt.to_string()),
                        k if GENERIC_MOUNT_OPTIONS.contains(&k)
                            || k.starts_with("x-")
                            || k == "comment"
                            || k == "subtype"
                            || k == "fsname" => {}
                        _ => return Err(format!("unknown mount option {opt:?}")),
                    }
                }
            }
            Some("-f") => return Ok(None),
            Some("-n" | "-s") => {}
            Some("-v") => out.push("-v".into()),
            Some(flag) if flag.starts_with('-') => {
                return Err(format!("unknown mount helper flag {flag}"))
            }
            _ => positional.push(arg.clone()),
        }
    }
    let [source, target] = <[OsString; 2]>::try_from(positional)
        .map_err(|p| format!("expected SOURCE and TARGET, got {} arguments", p.len()))?;
    if !fuse_options.is_empty() {
        out.extend(["-o".into(), fuse_options.join(",").into()]);
    }
    out.extend([source, target]);
    Ok(Some(out))
}

/// `256M`, `1G`, `65536`, `64MiB`: a byte count with an optional binary unit.
pub fn parse_secret(text: &str) -> Result<Secret, String> {
    Ok(Secret::new(text))
}

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
    use super::*;

    #[test]
    fn disk_cache_mount_options() {
        let mut d = DiskCacheArgs::default();
        assert!(d.config().is_none());
        assert!(d.set_option("cache_dir=/var/cache/f").unwrap());
        assert!(d.set_option("cache_dir_size=1G").unwrap());
        assert!(d.set_option("cache_decrypted").unwrap());
        assert!(!d.set_option("allow_other").unwrap());
        assert!(d.set_option("cache_dir_size=lots").is_err());
        let c = d.config().unwrap();
        assert_eq!(c.dir, std::path::Path::new("/var/cache/f"));
        assert_eq!(c.size, Some(1 << 30));
        assert!(c.decrypted);
    }

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    /// The help text says "2M"; the library's constant (which zerofs mirrors) must agree.
    #[test]
    fn the_default_read_ahead_is_the_library_constant() {
        let cli = Cli::try_parse_from(["fragfs", "mount", "a", "b"]).unwrap();
        let Command::Mount { read_ahead, .. } = cli.command else {
            panic!("not a mount command");
        };
        assert_eq!(read_ahead, fragfs::fuse::DEFAULT_READ_AHEAD);
    }

    #[test]
    fn mount_helper_calls_become_fragfs_mount() {
        let call = os(&[
            "/sbin/mount.fuse.fragfs",
            "/data/a",
            "/mnt/a",
            "-o",
            "rw,nofail,allow_other,cache_size=64M,cache_dir=/var/cache/f,cache_dir_size=2G,\
             cache_decrypted,x-systemd.automount",
        ]);
        let got = from_mount_helper(&call).unwrap().unwrap().unwrap();
        assert_eq!(
            got,
            os(&[
                "fragfs",
                "mount",
                "--cache-size",
                "64M",
                "--cache-dir",
                "/var/cache/f",
                "--cache-dir-size",
                "2G",
                "--cache-decrypted",
                "-o",
                "allow_other",
                "/data/a",
                "/mnt/a"
            ])
        );
        // mount.fuse3 runs the subtype's program as `fragfs SOURCE TARGET -o OPTS`.
        let call = os(&[
            "fragfs",
            "/data/a",
            "/mnt/a",
            "-o",
            "ro,threads=3,read_ahead=4M",
        ]);
        let got = from_mount_helper(&call).unwrap().unwrap().unwrap();
        assert_eq!(
            got,
            os(&[
                "fragfs",
                "mount",
                "--threads",
                "3",
                "--read-ahead",
                "4M",
                "/data/a",
                "/mnt/a"
            ])
        );
        assert_eq!(
            from_mount_helper(&os(&["mount.fragfs", "a", "b", "-f"])),
            Some(Ok(None))
        );
        assert!(
            from_mount_helper(&os(&["mount.fragfs", "a", "b", "-o", "bogus"]))
                .unwrap()
                .is_err()
        );
        assert!(from_mount_helper(&os(&["mount.fragfs", "a"]))
            .unwrap()
            .is_err());
        // Ordinary command lines are left alone.
        assert_eq!(from_mount_helper(&os(&["fragfs", "ls", "a"])), None);
        assert_eq!(from_mount_helper(&os(&["fragfs", "--help"])), None);
    }

    /// The help text says "64K"; the library's constant must agree.
    #[test]
    fn the_default_inline_limit_is_the_library_constant() {
        let cli = Cli::try_parse_from(["fragfs", "refs", "a"]).unwrap();
        let Command::Refs { inline_limit, .. } = cli.command else {
            panic!("not a refs command");
        };
        assert_eq!(inline_limit, fragfs::view::tiledb::DEFAULT_INLINE_LIMIT);
    }

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
