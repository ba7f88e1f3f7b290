//! The object_store client, built from the resolved configuration.

use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};

use super::config::{self};
use super::failure::{self};
use crate::error::{Error, Result};

pub(crate) fn build_client(bucket: &str, r: &config::Resolved) -> Result<AmazonS3> {
    let mut builder = AmazonS3Builder::from_env()
        .with_http_connector(failure::Connector)
        .with_bucket_name(bucket)
        .with_region(&r.region)
        .with_virtual_hosted_style_request(r.virtual_hosted)
        .with_skip_signature(r.no_sign_request)
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(50),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            // Bounded by time, not count: a burst of throttling gets the whole budget
            // (half here; `retrying` tries again within the rest).
            max_retries: usize::MAX,
            retry_timeout: r.retry_timeout / 2,
        })
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_connect_timeout(Duration::from_secs(5))
                .with_timeout(Duration::from_secs(120)),
        );
    if let Some(endpoint) = &r.endpoint {
        builder =
            builder.with_endpoint(config::bucket_endpoint(endpoint, bucket, r.virtual_hosted));
    }
    if let Some((id, secret, token)) = &r.keys {
        builder = builder
            .with_access_key_id(id)
            .with_secret_access_key(secret);
        if let Some(token) = token {
            builder = builder.with_token(token);
        }
    }
    builder
        .build()
        .map_err(|e| Error::InvalidArgument(format!("s3://{bucket}: {e}")))
}
