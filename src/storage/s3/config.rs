//! Where an S3 store is and how to reach it: the `s3://bucket/prefix` URI, the endpoint,
//! region, addressing style and credentials, as the AWS CLI finds them (flags, the
//! standard `AWS_*` environment variables, the `~/.aws/credentials` and `~/.aws/config`
//! profiles, then web-identity, container or instance credentials), so a mount works
//! wherever `aws s3 ls` does. Nothing here makes a request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

/// How long a request is retried (5xx, SlowDown, connection resets) before its read
/// fails with EIO: long enough to ride out a server restart or a burst of throttling,
/// short enough that a reader is not left hanging on a store that is gone.
pub const DEFAULT_RETRY_TIMEOUT: Duration = Duration::from_secs(15);

/// What the command line (or `-o` mount options) says about reaching the store.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct S3Options {
    /// `http(s)://host:port` of an S3-compatible server (Garage, Ceph RGW, MinIO);
    /// AWS itself when absent.
    pub endpoint_url: Option<String>,
    pub region: Option<String>,
    /// A profile of `~/.aws/credentials` / `~/.aws/config`.
    pub profile: Option<String>,
    /// Anonymous requests, for public buckets.
    pub no_sign_request: bool,
    /// `Some(true)`: `bucket.host` (virtual-hosted style); `Some(false)`: `host/bucket`
    /// (path style). By default: path style with an endpoint (self-hosted servers rarely
    /// have wildcard DNS), virtual-hosted on AWS.
    pub virtual_hosted: Option<bool>,
    /// How long a failing request is retried; [`DEFAULT_RETRY_TIMEOUT`] when absent.
    pub retry_timeout: Option<Duration>,
    /// Access key id and secret given by a program (they win over everything); the
    /// command line leaves this empty and finds keys as the AWS CLI does.
    pub keys: Option<(String, String)>,
}

/// Shows the key id of explicit keys, never their secret.
impl std::fmt::Debug for S3Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Options")
            .field("endpoint_url", &self.endpoint_url)
            .field("region", &self.region)
            .field("profile", &self.profile)
            .field("no_sign_request", &self.no_sign_request)
            .field("virtual_hosted", &self.virtual_hosted)
            .field("retry_timeout", &self.retry_timeout)
            .field("keys", &self.keys.as_ref().map(|(id, _)| (id, "redacted")))
            .finish()
    }
}

/// `s3://bucket/prefix`, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Uri {
    pub bucket: String,
    /// The root inside the bucket: no leading or trailing `/`; empty for the bucket.
    pub prefix: String,
}

/// Whether a command-line path names object storage rather than a local folder.
pub fn is_s3_uri(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.starts_with("s3://"))
}

impl S3Uri {
    /// A URI that cannot name a bucket and prefix names no array: ENOENT, as a local
    /// path that cannot exist.
    pub fn parse(uri: &str) -> Result<S3Uri> {
        let bad = |why: &str| Error::setup(libc::ENOENT, format!("{uri}: {why}"));
        let rest = uri
            .strip_prefix("s3://")
            .ok_or_else(|| bad("not an s3:// URI"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket name (s3://bucket/path/to/array)"));
        }
        let prefix = prefix.trim_matches('/');
        if prefix
            .split('/')
            .any(|p| p == "." || p == ".." || (p.is_empty() && !prefix.is_empty()))
        {
            return Err(bad("the path has an empty, `.` or `..` part"));
        }
        Ok(S3Uri {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

/// Keys and region found for a profile in the AWS CLI's files.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
}

/// Shows the key id, never the secret or the session token.
impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |s: &Option<String>| s.as_ref().map(|_| "redacted");
        f.debug_struct("Profile")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &hidden(&self.secret_access_key))
            .field("session_token", &hidden(&self.session_token))
            .field("region", &self.region)
            .field("endpoint_url", &self.endpoint_url)
            .finish()
    }
}

/// The sections of an INI file as the AWS CLI writes them: `[name]` then `key = value`
/// lines; `#`/`;` comments. Section names are kept as written (`profile x` in config).
fn parse_ini(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            section = Some(name);
        } else if let (Some(s), Some((k, v))) = (&section, line.split_once('=')) {
            out.entry(s.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

/// The profile `name` from the text of `~/.aws/credentials` and `~/.aws/config`
/// (credentials win, as in the AWS CLI); `None` when neither has it.
pub fn find_profile(name: &str, credentials: &str, config: &str) -> Option<Profile> {
    let creds = parse_ini(credentials);
    let conf = parse_ini(config);
    let in_config = if name == "default" {
        conf.get("default").or_else(|| conf.get("profile default"))
    } else {
        conf.get(&format!("profile {name}"))
    };
    let in_creds = creds.get(name);
    if in_creds.is_none() && in_config.is_none() {
        return None;
    }
    let get = |key: &str| {
        in_creds
            .and_then(|s| s.get(key))
            .or_else(|| in_config.and_then(|s| s.get(key)))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    Some(Profile {
        access_key_id: get("aws_access_key_id"),
        secret_access_key: get("aws_secret_access_key"),
        session_token: get("aws_session_token"),
        region: get("region"),
        endpoint_url: get("endpoint_url"),
    })
}

/// Where the AWS CLI's files are: `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`, or
/// under `~/.aws/`.
fn profile_files(env: &dyn Fn(&str) -> Option<String>) -> (Option<PathBuf>, Option<PathBuf>) {
    let home = env("HOME").map(PathBuf::from);
    let at = |var: &str, name: &str| {
        env(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    (
        at("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
        at("AWS_CONFIG_FILE", "config"),
    )
}

/// Everything needed to build the client, resolved from the options, the environment
/// and the profile files.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    pub endpoint: Option<String>,
    pub region: String,
    pub virtual_hosted: bool,
    /// Explicit keys (flags' profile, environment, or the default profile); `None`
    /// leaves the choice to the client's chain (web identity, container, instance).
    pub keys: Option<(String, String, Option<String>)>,
    pub no_sign_request: bool,
    pub retry_timeout: Duration,
}

/// Shows the key id, never the secret or the session token.
impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("virtual_hosted", &self.virtual_hosted)
            .field(
                "keys",
                &self
                    .keys
                    .as_ref()
                    .map(|(id, _, token)| (id, "redacted", token.as_ref().map(|_| "redacted"))),
            )
            .field("no_sign_request", &self.no_sign_request)
            .field("retry_timeout", &self.retry_timeout)
            .finish()
    }
}

/// Resolves the options as the AWS CLI would: an explicit `--profile` wins over keys in
/// the environment; otherwise environment keys, then the profile named by `AWS_PROFILE`
/// (or `default`), then the client's own chain. `env` reads an environment variable,
/// `read` a file (both injectable for tests).
pub fn resolve(
    options: &S3Options,
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Resolved> {
    let env = |k: &str| env(k).filter(|v| !v.is_empty());
    let (creds_file, config_file) = profile_files(&env);
    let text = |p: &Option<PathBuf>| p.as_deref().and_then(read).unwrap_or_default();
    let (creds_text, config_text) = (text(&creds_file), text(&config_file));
    let profile_name = options.profile.clone().or_else(|| env("AWS_PROFILE"));
    let profile = match &profile_name {
        Some(name) => Some(
            find_profile(name, &creds_text, &config_text).ok_or_else(|| {
                Error::setup(
                    libc::ENOENT,
                    format!(
                        "AWS profile {name:?} not found in {} or {}",
                        creds_file
                            .as_deref()
                            .unwrap_or(Path::new("~/.aws/credentials"))
                            .display(),
                        config_file
                            .as_deref()
                            .unwrap_or(Path::new("~/.aws/config"))
                            .display()
                    ),
                )
            })?,
        ),
        None => find_profile("default", &creds_text, &config_text),
    }
    .unwrap_or_default();
    let profile_keys = match (&profile.access_key_id, &profile.secret_access_key) {
        (Some(id), Some(secret)) => {
            Some((id.clone(), secret.clone(), profile.session_token.clone()))
        }
        _ => None,
    };
    let env_keys = match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Some((id, secret, env("AWS_SESSION_TOKEN"))),
        _ => None,
    };
    let explicit = options.keys.clone().map(|(id, secret)| (id, secret, None));
    let keys = if explicit.is_some() {
        explicit
    } else if options.profile.is_some() {
        profile_keys.or(env_keys)
    } else {
        env_keys.or(profile_keys)
    };
    let endpoint = options
        .endpoint_url
        .clone()
        .or_else(|| env("AWS_ENDPOINT_URL_S3"))
        .or_else(|| env("AWS_ENDPOINT_URL"))
        .or(profile.endpoint_url.clone())
        .map(|e| e.trim_end_matches('/').to_string());
    let virtual_hosted = options.virtual_hosted.unwrap_or(endpoint.is_none());
    if let Some(e) = &endpoint {
        let Some((_, rest)) = e
            .split_once("://")
            .filter(|(s, _)| *s == "http" || *s == "https")
        else {
            return Err(Error::InvalidArgument(format!(
                "endpoint URL {e:?}: must start with http:// or https://"
            )));
        };
        let host = rest.split('/').next().unwrap_or_default();
        let name = host
            .rsplit_once(':')
            .filter(|(_, port)| port.parse::<u16>().is_ok())
            .map_or(host, |(name, _)| name);
        if virtual_hosted && (name.parse::<std::net::IpAddr>().is_ok() || name.starts_with('[')) {
            return Err(Error::InvalidArgument(format!(
                "endpoint URL {e:?}: virtual-hosted addressing puts the bucket in the host \
                 name, which an IP address cannot have (use --addressing path)"
            )));
        }
    }
    let region = options
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .or(profile.region.clone())
        .unwrap_or_else(|| "us-east-1".to_string());
    Ok(Resolved {
        virtual_hosted,
        endpoint,
        region,
        keys,
        no_sign_request: options.no_sign_request,
        retry_timeout: options.retry_timeout.unwrap_or(DEFAULT_RETRY_TIMEOUT),
    })
}

/// The endpoint the client talks to for `bucket`: virtual-hosted style puts the bucket
/// in the host name (`http://bucket.host:port`), path style leaves it in the path.
pub fn bucket_endpoint(endpoint: &str, bucket: &str, virtual_hosted: bool) -> String {
    if !virtual_hosted {
        return endpoint.to_string();
    }
    match endpoint.split_once("://") {
        Some((scheme, host)) => format!("{scheme}://{bucket}.{host}"),
        None => endpoint.to_string(),
    }
}

#[cfg(test)]
mod tests {
    /// A `Debug` print (a log line, a panic) never shows a secret.
    #[test]
    fn debug_prints_redact_secrets() {
        let options = super::S3Options {
            keys: Some(("AKIDEXAMPLE".into(), "wJalrXUtnFEMI-secret".into())),
            ..Default::default()
        };
        let profile = super::Profile {
            access_key_id: Some("AKIDEXAMPLE".into()),
            secret_access_key: Some("wJalrXUtnFEMI-secret".into()),
            session_token: Some("FwoGZXIvYXdzEJr-token".into()),
            ..Default::default()
        };
        let resolved = super::Resolved {
            keys: Some((
                "AKIDEXAMPLE".into(),
                "wJalrXUtnFEMI-secret".into(),
                Some("FwoGZXIvYXdzEJr-token".into()),
            )),
            ..Default::default()
        };
        let shown = format!("{options:?} {profile:?} {resolved:?}");
        assert!(
            !shown.contains("-secret") && !shown.contains("-token"),
            "{shown}"
        );
        assert!(shown.contains("AKIDEXAMPLE"), "{shown}");
        let opened = crate::array::OpenOptions { key: Some([7; 32]) };
        assert!(!format!("{opened:?}").contains('7'));
    }

    use super::*;

    #[test]
    fn uris_split_into_bucket_and_prefix() {
        let u = S3Uri::parse("s3://b/a/x/").unwrap();
        assert_eq!((u.bucket.as_str(), u.prefix.as_str()), ("b", "a/x"));
        assert_eq!(S3Uri::parse("s3://b").unwrap().prefix, "");
        for bad in [
            "s3://",
            "s3:///x",
            "s3://b/a//c",
            "s3://b/../c",
            "file:///x",
        ] {
            // Names no bucket: nothing there (ENOENT), not EINVAL.
            let err = S3Uri::parse(bad).unwrap_err();
            assert_eq!(err.errno(), libc::ENOENT, "{bad}: {err}");
        }
        assert!(is_s3_uri(Path::new("s3://b/x")));
        assert!(!is_s3_uri(Path::new("/data/s3://x")));
    }

    const CREDS: &str = "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n\
                         [work]\naws_access_key_id=W\naws_secret_access_key=WS\naws_session_token=T\n";
    const CONFIG: &str =
        "[default]\nregion = eu-west-1\n# note\n[profile work]\nregion=us-west-2\n\
                          endpoint_url = http://garage:3900\n";

    fn resolve_with(options: &S3Options, vars: &[(&str, &str)]) -> Result<Resolved> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut all = vars.clone();
        all.insert("HOME".into(), "/home/u".into());
        resolve(options, &|k| all.get(k).cloned(), &|p| match p.to_str() {
            Some("/home/u/.aws/credentials") => Some(CREDS.into()),
            Some("/home/u/.aws/config") => Some(CONFIG.into()),
            _ => None,
        })
    }

    #[test]
    fn credentials_come_as_the_aws_cli_finds_them() {
        // Nothing set: the default profile, its region, virtual-hosted on AWS.
        let r = resolve_with(&S3Options::default(), &[]).unwrap();
        assert_eq!(r.keys, Some(("D".into(), "DS".into(), None)));
        assert_eq!((r.region.as_str(), r.virtual_hosted), ("eu-west-1", true));
        // Environment keys win over the default profile...
        let env = [("AWS_ACCESS_KEY_ID", "E"), ("AWS_SECRET_ACCESS_KEY", "ES")];
        let r = resolve_with(&S3Options::default(), &env).unwrap();
        assert_eq!(r.keys, Some(("E".into(), "ES".into(), None)));
        // ...but not over an explicit --profile, whose endpoint means path style.
        let work = S3Options {
            profile: Some("work".into()),
            ..S3Options::default()
        };
        let r = resolve_with(&work, &env).unwrap();
        assert_eq!(r.keys, Some(("W".into(), "WS".into(), Some("T".into()))));
        assert_eq!(r.endpoint.as_deref(), Some("http://garage:3900"));
        assert_eq!((r.region.as_str(), r.virtual_hosted), ("us-west-2", false));
        // AWS_PROFILE names the profile too; flags win over everything.
        let r = resolve_with(&S3Options::default(), &[("AWS_PROFILE", "work")]).unwrap();
        assert_eq!(r.keys.unwrap().0, "W");
        let flags = S3Options {
            endpoint_url: Some("http://minio.lan:9000/".into()),
            region: Some("r1".into()),
            virtual_hosted: Some(true),
            ..S3Options::default()
        };
        let r = resolve_with(&flags, &[("AWS_ENDPOINT_URL", "http://other")]).unwrap();
        assert_eq!(r.endpoint.as_deref(), Some("http://minio.lan:9000"));
        assert_eq!((r.region.as_str(), r.virtual_hosted), ("r1", true));
        let missing = S3Options {
            profile: Some("nope".into()),
            ..S3Options::default()
        };
        let err = resolve_with(&missing, &[]).unwrap_err();
        assert_eq!(err.errno(), libc::ENOENT, "{err}");
        let err = err.to_string();
        assert!(err.contains("\"nope\" not found"), "{err}");
        let bad = S3Options {
            endpoint_url: Some("localhost:9000".into()),
            ..S3Options::default()
        };
        assert!(resolve_with(&bad, &[]).is_err());
        let ip_virtual = S3Options {
            endpoint_url: Some("http://127.0.0.1:9000".into()),
            virtual_hosted: Some(true),
            ..S3Options::default()
        };
        let err = resolve_with(&ip_virtual, &[]).unwrap_err().to_string();
        assert!(err.contains("--addressing path"), "{err}");
    }

    #[test]
    fn virtual_hosted_endpoints_carry_the_bucket() {
        assert_eq!(
            bucket_endpoint("http://h:9000", "b", true),
            "http://b.h:9000"
        );
        assert_eq!(
            bucket_endpoint("http://h:9000", "b", false),
            "http://h:9000"
        );
    }
}
