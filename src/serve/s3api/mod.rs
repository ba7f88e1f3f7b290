//! The S3 API door: the tree as one read-only bucket, for boto3, s3fs/fsspec, the AWS
//! CLI, GDAL's `/vsis3/`, DuckDB's httpfs and every other S3 client.
//!
//! `s3s` parses the requests (path style: `http://host/BUCKET/KEY`), checks SigV4 when
//! keys are set and writes S3's XML; this module answers the read operations from the
//! tree: ListBuckets, GetBucketLocation, HeadBucket, ListObjectsV2 and ListObjects
//! ([`super::s3list`]), HeadObject and GetObject (one `Range`, `If-Match`,
//! `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since`). A key is a path of the
//! tree (`latest/a/values.bin`); folders are not keys, they show as common prefixes.
//!
//! Every PUT, POST and DELETE (S3's writes: PutObject, DeleteObject(s), CreateBucket,
//! the multipart uploads, every Put*Configuration) is answered AccessDenied before its
//! body is read or its signature checked; other operations s3s knows answer
//! NotImplemented. Each object answers the `ETag` the HTTP door answers for the same
//! path ([`super::file::etag`]), so S3 and HTTP clients (and two servers over the same
//! array) agree.
//!
//! Files: `door.rs` (the door's options, the bucket's name, the service s3s runs),
//! `bucket.rs` (the tree as one bucket: keys found, listing pages), `answers.rs` (each
//! read operation answered, the conditional headers).

mod answers;
mod bucket;
mod door;

pub use door::*;
