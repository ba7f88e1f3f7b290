//! The tree as one bucket: keys found in the tree ([`Bucketed::find`]) and listing
//! pages of keys and common prefixes ([`Bucketed::list`], the order and paging
//! [`crate::serve::s3list`]'s), with the S3 error of a tree error.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use s3s::dto::{CommonPrefix, ETag, Object, Timestamp};
use s3s::{s3_error, S3Error, S3Result};

use crate::error::Error;
use crate::serve::budget::Budget;
use crate::serve::file::etag;
use crate::serve::listing::gone;
use crate::serve::s3list::{self, plain_name, Folders, Item};
use crate::serve::sizing::Sizing;
use crate::view::held::Held;
use crate::view::prefetch::Prefetcher;
use crate::view::{FileTree, Ino, Kind, Stat, ROOT};
use crate::wire::path::encode;

/// Most keys a listing page holds, as S3 allows.
pub const MAX_KEYS: i32 = 1000;

/// The tree as the one bucket `bucket`.
pub struct Bucketed {
    pub tree: Arc<dyn FileTree>,
    /// The read-ahead workers that prepare a sequential body's next bytes.
    pub ahead: Option<Arc<Prefetcher>>,
    /// Where text files are rendered to learn their size.
    pub sizing: Arc<Sizing>,
    /// The memory the answers of every door hold at once.
    pub budget: Arc<Budget>,
    /// The folders recent listing pages read, sorted.
    pub folders: Folders,
    pub bucket: String,
    /// The bucket's creation date, and the time of files that have none.
    pub started: SystemTime,
}

/// A file as HeadObject and GetObject answer it.
pub struct Found {
    pub held: Arc<Held>,
    /// `None` for a text file not sized yet (the sizing pool renders it).
    pub size: Option<u64>,
    pub etag: Option<String>,
    pub modified: SystemTime,
    pub content_type: &'static str,
}

impl Found {
    pub fn size(&self) -> u64 {
        self.size.unwrap_or(0)
    }
}

impl Bucketed {
    pub fn check_bucket(&self, bucket: &str) -> S3Result<()> {
        if bucket == self.bucket {
            Ok(())
        } else {
            Err(s3_error!(NoSuchBucket))
        }
    }

    /// The file `key` names, held, with its size where known and its validators.
    pub fn find(&self, key: &str) -> S3Result<Found> {
        let mut ino = ROOT;
        for name in key.split('/') {
            if !plain_name(name) {
                return Err(s3_error!(NoSuchKey));
            }
            ino = self
                .tree
                .lookup(ino, name)
                .map_err(|e| tree_error(key, &e))?
                .ino;
        }
        let stat = self.tree.stat(ino).map_err(|e| tree_error(key, &e))?;
        if stat.kind != Kind::File {
            return Err(s3_error!(NoSuchKey));
        }
        let held = Held::take(&self.tree, ino).map_err(|e| tree_error(key, &e))?;
        let etag = etag(&*self.tree, key, ino, &stat).map_err(|e| tree_error(key, &e))?;
        let name = key.rsplit('/').next().unwrap_or(key);
        Ok(Found {
            held: Arc::new(held),
            size: self.size_of(ino, &stat),
            etag,
            modified: self.modified(&stat),
            content_type: self.tree.content_type(ino, name),
        })
    }

    /// A file's size if known without rendering it.
    pub fn size_of(&self, ino: Ino, stat: &Stat) -> Option<u64> {
        if stat.exact_size {
            Some(stat.size)
        } else {
            self.sizing.known(ino)
        }
    }

    pub fn modified(&self, stat: &Stat) -> SystemTime {
        stat.mtime_ms.map_or(self.started, |ms| {
            SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
        })
    }

    /// One listing page as V2 and V1 both answer it; objects whose size is not known
    /// yet are listed with `None` (sized in the pool before the answer).
    pub fn list(&self, asked: &Asked) -> S3Result<Listed> {
        let page = s3list::page(
            &*self.tree,
            &self.folders,
            &asked.prefix,
            asked.delimiter.as_deref(),
            asked.after.as_deref(),
            asked.max,
        )
        .map_err(|e| tree_error(&asked.prefix, &e))?;
        let mut objects = Vec::new();
        let mut prefixes = Vec::new();
        let last = page.items.last().map(|i| i.key().to_string());
        for item in page.items {
            match item {
                Item::Prefix(p) => prefixes.push(CommonPrefix {
                    prefix: Some(asked.shown(&p)),
                }),
                Item::Object { key, ino } => {
                    let stat = match self.tree.stat(ino) {
                        Ok(s) => s,
                        // Gone since the listing (a vacuum): left out.
                        Err(e) if gone(&e) => continue,
                        Err(e) => return Err(tree_error(&key, &e)),
                    };
                    // A file that cannot be read is still listed (with the size its
                    // stat gives, no ETag): a GET of it answers the error.
                    let etag = etag(&*self.tree, &key, ino, &stat).ok().flatten();
                    let size = self.size_of(ino, &stat);
                    objects.push((
                        ino,
                        size.is_none(),
                        Object {
                            key: Some(asked.shown(&key)),
                            size: Some(i64::try_from(size.unwrap_or(0)).unwrap_or(i64::MAX)),
                            e_tag: etag.map(strong),
                            last_modified: Some(Timestamp::from(self.modified(&stat))),
                            storage_class: Some(s3s::dto::ObjectStorageClass::from_static(
                                s3s::dto::ObjectStorageClass::STANDARD,
                            )),
                            ..Default::default()
                        },
                    ));
                }
            }
        }
        Ok(Listed {
            count: (objects.len() + prefixes.len()) as i32,
            objects,
            prefixes,
            next: if page.truncated { last } else { None },
        })
    }
}

/// What a listing asks, decoded.
pub struct Asked {
    pub prefix: String,
    pub delimiter: Option<String>,
    pub after: Option<String>,
    pub max: usize,
    /// `encoding-type=url`: keys and prefixes in the answer are percent-encoded.
    pub url: bool,
}

impl Asked {
    pub fn new(
        prefix: Option<&str>,
        delimiter: Option<&str>,
        after: Option<String>,
        max_keys: Option<i32>,
        encoding: Option<&s3s::dto::EncodingType>,
    ) -> S3Result<Asked> {
        let url = match encoding.map(s3s::dto::EncodingType::as_str) {
            None => false,
            Some(s3s::dto::EncodingType::URL) => true,
            Some(other) => {
                return Err(s3_error!(
                    InvalidArgument,
                    "unknown encoding-type {other:?}"
                ));
            }
        };
        let max = max_keys.unwrap_or(MAX_KEYS);
        if max < 0 {
            return Err(s3_error!(InvalidArgument, "max-keys below 0"));
        }
        Ok(Asked {
            prefix: prefix.unwrap_or_default().to_string(),
            delimiter: delimiter.filter(|d| !d.is_empty()).map(str::to_string),
            after,
            max: max.min(MAX_KEYS) as usize,
            url,
        })
    }

    /// A key or prefix as the answer shows it.
    pub fn shown(&self, key: &str) -> String {
        if self.url {
            key.split('/').map(encode).collect::<Vec<_>>().join("/")
        } else {
            key.to_string()
        }
    }

    pub fn shown_opt(&self, text: Option<String>) -> Option<String> {
        text.map(|t| self.shown(&t))
    }
}

pub struct Listed {
    /// Each object with its file, and whether its size is still to be learnt.
    pub objects: Vec<(Ino, bool, Object)>,
    pub prefixes: Vec<CommonPrefix>,
    pub count: i32,
    /// The last key of a truncated page.
    pub next: Option<String>,
}

pub fn strong(quoted: String) -> ETag {
    ETag::Strong(quoted.trim_matches('"').to_string())
}

/// The S3 error of a tree error; what is not a missing key is logged with its key.
pub fn tree_error(key: &str, e: &Error) -> S3Error {
    match e.errno() {
        libc::ENOENT | libc::ENOTDIR | libc::EISDIR => s3_error!(NoSuchKey),
        libc::EACCES | libc::EPERM => s3_error!(AccessDenied),
        _ => {
            log::error!("s3: {key}: {e}");
            s3_error!(InternalError, "{e}")
        }
    }
}
