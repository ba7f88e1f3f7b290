//! The `fragfs` command: parses arguments, opens the view, prints.

mod cli;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use cli::{ArrayArgs, Cli, Command};
use fragfs::array::{parse_key, OpenOptions};
use fragfs::fuse::MountConfig;
use fragfs::mount::{MountRequest, Unmounted};
use fragfs::serve::s3api::S3Door;
use fragfs::serve::tls::TlsFiles;
use fragfs::serve::{Doors, Limits, ServeRequest};
use fragfs::view::cached::CachedTree;
use fragfs::view::tiledb::{RefOptions, Refs};
use fragfs::view::{
    open_array, open_disk_cache, open_source, FileTree, Ino, Kind, DEFAULT_CACHE_SIZE,
};
use fragfs::Result;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match cli::from_mount_helper(&args) {
        None => Cli::parse_from(args),
        Some(Ok(Some(translated))) => Cli::parse_from(translated),
        Some(Ok(None)) => return ExitCode::SUCCESS, // mount -f: a fake mount
        Some(Err(e)) => {
            eprintln!("fragfs: {e}");
            return ExitCode::FAILURE;
        }
    };
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let mut logger =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level));
    if let Some(path) = &cli.log_file {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(file) => {
                logger.target(env_logger::Target::Pipe(Box::new(file)));
            }
            Err(e) => {
                eprintln!("fragfs: log file {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    logger.init();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fragfs: {e}");
            ExitCode::FAILURE
        }
    }
}

fn open(args: &ArrayArgs) -> Result<Arc<dyn FileTree>> {
    let key = args.encryption_key.as_deref().map(parse_key).transpose()?;
    open_source(
        &args.array,
        &args.s3.options(),
        OpenOptions { key },
        args.chunk_options(),
        DEFAULT_CACHE_SIZE,
        open_disk_cache(args.disk_cache.config().as_ref())?,
    )
}

fn run(command: Command) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| fragfs::Error::io("<stdout>", e);
    match command {
        Command::Ls {
            array,
            path,
            long,
            recursive,
        } => {
            let view = open(&array)?;
            let node = view.resolve(&path)?;
            let text = fragfs::ls::list(&*view, node, &path, long, recursive)?;
            out.write_all(text.as_bytes()).map_err(io)?;
        }
        Command::Cat { array, path } => {
            let view = open(&array)?;
            let node = view.resolve(&path)?;
            if view.stat(node)?.kind == Kind::Dir {
                return Err(fragfs::Error::IsDirectory(path));
            }
            copy_file(&*view, node, &mut out)?;
        }
        Command::Info { array } => {
            let view = open(&array)?;
            let mut text = fragfs::info::render(&view.info()?);
            if let Some(config) = array.disk_cache.config() {
                let Some(cache) = open_disk_cache(Some(&config))? else {
                    text.push_str("disk cache: not used (the log says why)\n");
                    out.write_all(text.as_bytes()).map_err(io)?;
                    return Ok(());
                };
                text.push_str(&CachedTree::new(view, cache).describe());
                text.push_str(&match fragfs::fuse::passthrough_possible() {
                    Ok(()) => "  complete fragment files: read by the kernel (FUSE passthrough)\n"
                        .to_string(),
                    Err(why) => {
                        format!("  complete files: read from the cache by the daemon ({why})\n")
                    }
                });
            }
            out.write_all(text.as_bytes()).map_err(io)?;
        }
        Command::Refs {
            array,
            s3,
            encryption_key,
            at,
            output,
            serve_url,
            inline_limit,
        } => {
            let key = encryption_key.as_deref().map(parse_key).transpose()?;
            let tree = open_array(
                &array,
                &s3.options(),
                OpenOptions { key },
                DEFAULT_CACHE_SIZE,
            )?;
            let options = RefOptions {
                serve_url,
                inline_limit,
            };
            match tree.refs(at, &options)? {
                Refs::Made { json, summary } => {
                    match &output {
                        Some(path) => std::fs::write(path, &json)
                            .map_err(|e| fragfs::Error::io(path.as_path(), e))?,
                        None => out.write_all(&json).map_err(io)?,
                    }
                    eprintln!("fragfs refs: {summary}");
                }
                Refs::Refused(chunks) => {
                    for (chunk, why) in &chunks {
                        eprintln!("fragfs refs: {chunk}: {why}");
                    }
                    let n = match chunks.len() {
                        1 => "1 chunk".to_string(),
                        n => format!("{n} chunks"),
                    };
                    return Err(fragfs::Error::InvalidArgument(format!(
                        "{n} can be neither referenced, inlined nor served: no reference set \
                         written (a larger --inline-limit, or --serve-url, would)"
                    )));
                }
            }
        }
        Command::Mount {
            mut array,
            mountpoint,
            foreground,
            options,
            threads,
            cache_size,
            read_ahead,
        } => {
            let key = array.encryption_key.as_deref().map(parse_key).transpose()?;
            let threads = threads
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
                .unwrap_or(2);
            let mut fuse = MountConfig {
                allow_other: false,
                allow_root: false,
                auto_unmount: false,
                threads,
                read_ahead,
                exit_on_unmount: true,
                passthrough: array.disk_cache.cache_dir.is_some(),
            };
            for option in options.iter().map(|o| o.trim()) {
                match option {
                    "allow_other" => fuse.allow_other = true,
                    "allow_root" => fuse.allow_root = true,
                    "auto_unmount" => fuse.auto_unmount = true,
                    "ro" | "" => {}
                    other
                        if array
                            .s3
                            .set_option(other)
                            .map_err(fragfs::Error::InvalidArgument)? => {}
                    other
                        if array
                            .disk_cache
                            .set_option(other)
                            .map_err(fragfs::Error::InvalidArgument)? => {}
                    other => {
                        return Err(fragfs::Error::InvalidArgument(format!(
                            "unknown mount option {other:?} (known: allow_other, allow_root, \
                             auto_unmount, ro, cache_dir, cache_dir_size, cache_decrypted; for \
                             s3:// arrays endpoint_url, region, profile, no_sign_request, \
                             addressing, retry_timeout)"
                        )))
                    }
                }
            }
            let chunk = array.chunk_options();
            fragfs::mount::run(MountRequest {
                s3: array.s3.options(),
                array: array.array,
                mountpoint,
                options: OpenOptions { key },
                chunk,
                cache_size,
                disk_cache: array.disk_cache.config(),
                foreground,
                fuse,
            })?;
        }
        Command::Serve {
            array,
            http,
            webdav,
            nfs,
            token,
            token_file,
            s3_api,
            bucket,
            s3_domain,
            s3_access_key,
            s3_secret_key,
            s3_secret_key_file,
            insecure_listen,
            allowed_host,
            cors_origin,
            tls_cert,
            tls_key,
            max_connections,
            max_connections_per_client,
            threads,
            cache_size,
        } => {
            let key = array.encryption_key.as_deref().map(parse_key).transpose()?;
            let threads = threads
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
                .unwrap_or(2);
            let chunk = array.chunk_options();
            let token = match token_file {
                Some(path) => Some(read_secret(&path, "--token-file")?),
                None => token,
            };
            let s3_secret_key = match s3_secret_key_file {
                Some(path) => Some(read_secret(&path, "--s3-secret-key-file")?),
                None => s3_secret_key,
            };
            if s3_access_key.is_some() != s3_secret_key.is_some() {
                return Err(fragfs::Error::InvalidArgument(
                    "--s3-access-key goes with --s3-secret-key-file (or --s3-secret-key, or \
                     FRAGFS_S3_SECRET_KEY)"
                        .into(),
                ));
            }
            fragfs::serve::run(ServeRequest {
                s3: array.s3.options(),
                array: array.array,
                options: OpenOptions { key },
                chunk,
                cache_size,
                disk_cache: array.disk_cache.config(),
                threads,
                doors: Doors {
                    http,
                    webdav,
                    nfs,
                    token,
                    s3: s3_api,
                    s3_door: S3Door {
                        keys: s3_access_key.zip(s3_secret_key),
                        bucket,
                        domain: s3_domain,
                    },
                    insecure_listen,
                    allowed_hosts: allowed_host,
                    cors_origins: cors_origin,
                    tls: tls_cert
                        .zip(tls_key)
                        .map(|(cert, key)| TlsFiles { cert, key }),
                    limits: Limits {
                        max_connections,
                        max_connections_per_client,
                        ..Limits::default()
                    },
                },
            })?;
        }
        Command::Umount { mountpoint } => {
            if fragfs::mount::unmount(&mountpoint)? == Unmounted::Lazily {
                eprintln!(
                    "fragfs: {} is busy (files are open): detached now, it goes away when \
                     the last one is closed",
                    mountpoint.display()
                );
            }
        }
    }
    out.flush().map_err(io)
}

/// Streams a file in 1 MiB reads through `read_into`, as the mount reads it: to its end,
/// whether its size is known yet or not (a text file's is known once rendered).
fn copy_file(view: &dyn FileTree, node: Ino, out: &mut impl Write) -> Result<()> {
    const STEP: u64 = 1 << 20;
    let mut offset = 0;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        view.read_into(node, offset, STEP, &mut bytes)?;
        if bytes.is_empty() {
            break;
        }
        offset += bytes.len() as u64;
        if let Err(e) = out.write_all(&bytes) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(fragfs::Error::io("<stdout>", e));
        }
    }
    Ok(())
}

/// A secret from the file `path` (`--token-file`): its text without the line end an
/// editor leaves; an error names the option and the file.
fn read_secret(path: &std::path::Path, option: &str) -> Result<fragfs::secret::Secret> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| fragfs::Error::InvalidArgument(format!("{option} {}: {e}", path.display())))?;
    Ok(fragfs::secret::Secret::from_file_text(&text))
}
