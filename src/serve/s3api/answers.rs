//! The answers of the S3 API door: what s3s calls for each read operation
//! ([`Answers`]), each run on the blocking pool over the bucket, and what the
//! conditional headers of a GET or HEAD decide.

use std::sync::Arc;
use std::time::SystemTime;

use s3s::dto::{
    Bucket, ETagCondition, GetBucketLocationInput, GetBucketLocationOutput,
    GetObjectInput, GetObjectOutput, HeadBucketInput, HeadBucketOutput, HeadObjectInput,
    HeadObjectOutput, ListBucketsInput, ListBucketsOutput, ListObjectsInput, ListObjectsOutput,
    ListObjectsV2Input, ListObjectsV2Output, Owner, Range, StreamingBlob, Timestamp,
};
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result, S3};

use super::bucket::{strong, tree_error, Asked, Bucketed, Found, Listed};
use crate::serve::file::{chunks, first_chunk, CHUNK};
use crate::serve::s3list;
use crate::serve::sizing::Unsized;

/// What the conditional headers of a GET or HEAD decide.
enum Condition {
    Serve,
    NotModified,
}

fn conditions(
    found: &Found,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<Condition> {
    let ours = found.etag.as_deref().map(|t| t.trim_matches('"'));
    let matches = |c: &ETagCondition| match c {
        ETagCondition::Any => true,
        ETagCondition::ETag(t) => Some(t.value()) == ours,
    };
    let secs = |t: &Timestamp| {
        let mut text = Vec::new();
        let _ = t.format(s3s::dto::TimestampFormat::EpochSeconds, &mut text);
        let text = String::from_utf8_lossy(&text);
        // "1700000000" or "1700000000.5": whole seconds, as HTTP dates have.
        text.split('.')
            .next()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let modified = found
        .modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if let Some(c) = if_match {
        if !matches(c) {
            return Err(s3_error!(PreconditionFailed));
        }
    } else if if_unmodified_since.is_some_and(|t| modified > secs(t)) {
        return Err(s3_error!(PreconditionFailed));
    }
    if let Some(c) = if_none_match {
        if matches(c) {
            return Ok(Condition::NotModified);
        }
    } else if if_modified_since.is_some_and(|t| modified <= secs(t)) {
        return Ok(Condition::NotModified);
    }
    Ok(Condition::Serve)
}

/// 304 Not Modified, with the validators (s3s writes an answer's status from its
/// output's fields: a 304 is written as an error).
fn not_modified(found: &Found) -> S3Error {
    let mut e = s3_error!(NotModified);
    let mut headers = hyper::HeaderMap::new();
    if let Some(v) = found
        .etag
        .as_deref()
        .and_then(|t| hyper::header::HeaderValue::from_str(t).ok())
    {
        headers.insert(hyper::header::ETAG, v);
    }
    let date = crate::serve::file::http_date(
        found
            .modified
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    );
    if let Ok(v) = hyper::header::HeaderValue::from_str(&date) {
        headers.insert(hyper::header::LAST_MODIFIED, v);
    }
    e.set_headers(headers);
    e
}

/// `[start, end)` of a file of `size` bytes that `range` asks for.
fn span(range: Option<&Range>, size: u64) -> S3Result<Option<std::ops::Range<u64>>> {
    match range {
        None => Ok(None),
        Some(r) => Ok(Some(r.check(size)?)),
    }
}

/// What s3s calls: the bucket, shared with the blocking tasks that read the tree.
pub struct Answers(pub Arc<Bucketed>);

impl Answers {
    /// Runs `f` on the blocking pool (every tree call may decode or wait on storage).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Bucketed) -> S3Result<T> + Send + 'static,
    ) -> S3Result<T> {
        let this = self.0.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|e| {
                log::error!("s3: a request's task failed: {e}");
                s3_error!(InternalError)
            })?
    }

    /// The page a listing asks for, in either version's terms (`after`: v1's marker, or
    /// v2's continuation token or start-after), with what it asked, decoded.
    async fn page(
        &self,
        bucket: &str,
        prefix: Option<&str>,
        delimiter: Option<&str>,
        after: Option<String>,
        max_keys: Option<i32>,
        encoding: Option<&s3s::dto::EncodingType>,
    ) -> S3Result<(Asked, Listed)> {
        self.0.check_bucket(bucket)?;
        let asked = Asked::new(prefix, delimiter, after, max_keys, encoding)?;
        let (asked, mut listed) = self
            .blocking(move |b| {
                let listed = b.list(&asked)?;
                Ok((asked, listed))
            })
            .await?;
        // Text files not sized yet, rendered in the sizing pool (all of the page's at
        // once): S3 clients trust a listing's sizes.
        let pending: Vec<usize> = (0..listed.objects.len())
            .filter(|&i| listed.objects[i].1)
            .collect();
        let sizes = futures::future::join_all(
            pending
                .iter()
                .map(|&i| self.0.sizing.size(listed.objects[i].0)),
        )
        .await;
        for (i, size) in pending.into_iter().zip(sizes) {
            match size {
                Ok(size) => {
                    listed.objects[i].2.size = Some(i64::try_from(size).unwrap_or(i64::MAX))
                }
                // Listed all the same, with the size its stat gives: a GET answers why.
                Err(Unsized::Failed(_)) => {}
                Err(why) => return Err(slow_down(why)),
            }
        }
        Ok((asked, listed))
    }

    /// The file `key` names with its size, a text file rendered in the sizing pool to
    /// know it.
    async fn find(&self, key: String) -> S3Result<Found> {
        let k = key.clone();
        let mut found = self.blocking(move |b| b.find(&k)).await?;
        if found.size.is_none() {
            match self.0.sizing.size(found.held.ino).await {
                Ok(size) => found.size = Some(size),
                Err(Unsized::Failed(e)) => return Err(tree_error(&key, &e)),
                Err(why) => return Err(slow_down(why)),
            }
        }
        Ok(found)
    }
}

/// S3's "reduce your request rate" (503), which every SDK retries after a pause: for a
/// text file still being rendered to learn its size, or too many at once.
fn slow_down(_: Unsized) -> S3Error {
    s3_error!(
        SlowDown,
        "a text file is still being rendered to learn its size: try again"
    )
}

fn timestamp_of(t: SystemTime) -> Timestamp {
    Timestamp::from(t)
}

#[async_trait::async_trait]
impl S3 for Answers {
    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(vec![Bucket {
                name: Some(self.0.bucket.clone()),
                creation_date: Some(timestamp_of(self.0.started)),
                bucket_region: None,
            }]),
            owner: Some(Owner {
                display_name: Some("fragfs".into()),
                id: Some("fragfs".into()),
            }),
            ..Default::default()
        }))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        self.0.check_bucket(&input.bucket)?;
        // Resume after the later of the token's key and start-after.
        let token = match input.continuation_token.as_deref() {
            None => None,
            Some(t) => Some(s3list::untoken(t).ok_or_else(|| {
                s3_error!(InvalidArgument, "the continuation token is not valid")
            })?),
        };
        let after = match (token, input.start_after.clone()) {
            (Some(t), Some(s)) => Some(t.max(s)),
            (t, s) => t.or(s),
        };
        let (asked, listed) = self
            .page(
                &input.bucket,
                input.prefix.as_deref(),
                input.delimiter.as_deref(),
                after,
                input.max_keys,
                input.encoding_type.as_ref(),
            )
            .await?;
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: asked.shown_opt(input.prefix),
            delimiter: asked.shown_opt(input.delimiter),
            start_after: asked.shown_opt(input.start_after),
            max_keys: Some(asked.max as i32),
            key_count: Some(listed.count),
            is_truncated: Some(listed.next.is_some()),
            continuation_token: input.continuation_token,
            next_continuation_token: listed.next.as_deref().map(s3list::token),
            encoding_type: input.encoding_type,
            contents: Some(listed.objects.into_iter().map(|(_, _, o)| o).collect()),
            common_prefixes: Some(listed.prefixes),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let input = req.input;
        let (asked, listed) = self
            .page(
                &input.bucket,
                input.prefix.as_deref(),
                input.delimiter.as_deref(),
                input.marker.clone(),
                input.max_keys,
                input.encoding_type.as_ref(),
            )
            .await?;
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(input.bucket),
            prefix: asked.shown_opt(input.prefix),
            delimiter: asked.shown_opt(input.delimiter),
            marker: asked.shown_opt(input.marker),
            max_keys: Some(asked.max as i32),
            is_truncated: Some(listed.next.is_some()),
            next_marker: asked.shown_opt(listed.next),
            encoding_type: input.encoding_type,
            contents: Some(listed.objects.into_iter().map(|(_, _, o)| o).collect()),
            common_prefixes: Some(listed.prefixes),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        self.0.check_bucket(&input.bucket)?;
        let found = self.find(input.key.clone()).await?;
        let condition = conditions(
            &found,
            input.if_match.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
            input.if_unmodified_since.as_ref(),
        )?;
        let output = HeadObjectOutput {
            content_length: Some(i64::try_from(found.size()).unwrap_or(i64::MAX)),
            content_type: Some(found.content_type.to_string()),
            accept_ranges: Some("bytes".into()),
            e_tag: found.etag.clone().map(strong),
            last_modified: Some(timestamp_of(found.modified)),
            ..Default::default()
        };
        if let Condition::NotModified = condition {
            return Err(not_modified(&found));
        }
        Ok(S3Response::new(output))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        self.0.check_bucket(&input.bucket)?;
        if input.part_number.is_some_and(|n| n != 1) {
            return Err(s3_error!(InvalidArgument, "the object has one part"));
        }
        let found = self.find(input.key.clone()).await?;
        let condition = conditions(
            &found,
            input.if_match.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
            input.if_unmodified_since.as_ref(),
        )?;
        let mut output = GetObjectOutput {
            content_type: Some(found.content_type.to_string()),
            accept_ranges: Some("bytes".into()),
            e_tag: found.etag.clone().map(strong),
            last_modified: Some(timestamp_of(found.modified)),
            ..Default::default()
        };
        if let Condition::NotModified = condition {
            return Err(not_modified(&found));
        }
        let size = found.size();
        let part = span(input.range.as_ref(), size)?;
        let (start, end) = part.clone().map_or((0, size), |r| (r.start, r.end));
        // The first chunk is read before answering, so that a file that cannot be read
        // answers an error rather than a cut body.
        let held = found.held.clone();
        let first_len = (end - start).min(CHUNK);
        let key = input.key.clone();
        let Some(share) = self.0.budget.take(first_len as usize).await else {
            return Err(s3_error!(
                SlowDown,
                "the server's memory budget is held by slow clients: try again"
            ));
        };
        let first = self
            .blocking(move |this| {
                first_chunk(&held, this.ahead.as_deref(), start, Some(end), share)
                    .map_err(|e| tree_error(&key, &e))
            })
            .await?;
        if (first.len() as u64) < first_len {
            log::error!("s3: {}: shorter than its size", input.key);
            return Err(s3_error!(
                InternalError,
                "the file is shorter than its size"
            ));
        }
        output.content_length = Some(i64::try_from(end - start).unwrap_or(i64::MAX));
        if part.is_some() {
            output.content_range = Some(format!("bytes {start}-{}/{size}", end.saturating_sub(1)));
        }
        let chunks = chunks(
            found.held,
            self.0.ahead.clone(),
            self.0.budget.clone(),
            input.key,
            start,
            Some(end),
            first,
        );
        output.body = Some(StreamingBlob::wrap(chunks));
        Ok(S3Response::new(output))
    }
}

