//! Reading ranges: planned, fetched (in parts, with read-ahead), from the disk cache.

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use super::disk::ObjectDisk;
use super::parts::{self, AHEAD_PART, READ_PART};
use super::plan::{plan, Outcome, Piece};
use super::request::{Got, Unfinished};
use super::store::S3Store;
use crate::error::{Error, Place, Result};
use crate::storage::{check_key, past_end, RangeRead, Store};

impl S3Store {
    /// The bytes of `wanted` ranges of object `full` (`key` relative to the root, for
    /// messages): from kept bytes, the disk cache (`disk`: the object's entry there),
    /// fetches under way, and GETs of the rest, in parts, all of them issued at once.
    pub(crate) fn fetch_ranges(
        &self,
        full: &str,
        wanted: &[Range<u64>],
        disk: Option<&ObjectDisk>,
    ) -> Result<Outcome> {
        let mut own = Vec::new();
        let plans: Vec<Vec<Piece>> = {
            let mut state = self.state();
            wanted
                .iter()
                .map(|r| plan(&mut state, full, r.clone(), READ_PART, disk, &mut own))
                .collect()
        };
        if !own.is_empty() {
            let mut unfinished = Unfinished {
                inner: self.inner.clone(),
                fetches: own.clone(),
            };
            let inner = &self.inner;
            let results: Vec<Result<Got>> = self.runtime.block_on(
                futures::stream::iter(own.iter().map(|f| inner.get(full, Some(f.range.clone()))))
                    .buffered(parts::MAX_IN_FLIGHT)
                    .collect(),
            );
            unfinished.fetches.clear();
            for (f, r) in own.iter().zip(results) {
                inner.complete(f, r);
            }
        }
        let mut changed = false;
        let mut out = Vec::with_capacity(plans.len());
        for plan in plans {
            let mut pieces = Vec::with_capacity(plan.len());
            for piece in plan {
                match piece {
                    Piece::Kept(start, bytes) => pieces.push((start, bytes)),
                    Piece::Fetching(f) => {
                        let fetched = match f.wait() {
                            Ok(b) => b,
                            // Another's fetch failed (a read-ahead, say): this reader
                            // asks for itself, with its own retries.
                            Err(_) if !own.iter().any(|o| Arc::ptr_eq(o, &f)) => {
                                let got = self
                                    .runtime
                                    .block_on(self.inner.get(full, Some(f.range.clone())));
                                self.inner
                                    .absorb(full, f.range.start, f.disk.as_ref(), got)?
                            }
                            Err(e) => return Err(e),
                        };
                        changed |= !fetched.agrees;
                        pieces.push((f.range.start, fetched.bytes));
                    }
                    Piece::Disk(range) => {
                        let Some(d) = disk else { continue };
                        let (bytes, agrees) = self.read_disk(full, d, range.clone())?;
                        changed |= !agrees;
                        pieces.push((range.start, bytes));
                    }
                }
            }
            out.push(pieces);
        }
        Ok(if changed {
            Outcome::Changed
        } else {
            Outcome::Read(out)
        })
    }

    /// `range` of `full` from its disk entry: the blocks it holds, checked against
    /// their records; those damaged on disk are fetched again (and kept). Also says
    /// whether the fetched ones agreed with the entry's version.
    pub(crate) fn read_disk(
        &self,
        full: &str,
        d: &ObjectDisk,
        range: Range<u64>,
    ) -> Result<(Bytes, bool)> {
        let agrees = Cell::new(true);
        let mut out = Vec::with_capacity((range.end - range.start) as usize);
        let inner = &self.inner;
        d.entry.read(
            range.start,
            range.end - range.start,
            &mut out,
            &mut |from, n, buf| {
                let got = self.runtime.block_on(inner.get(full, Some(from..from + n)));
                // Kept by `absorb` where it agrees with the version.
                let fetched = inner.absorb(full, from, Some(d), got)?;
                agrees.set(agrees.get() && fetched.agrees);
                buf.extend_from_slice(&fetched.bytes);
                Ok(())
            },
            &mut |_| None,
        )?;
        Ok((Bytes::from(out), agrees.get()))
    }

    /// Starts fetching `range` of `full` in the background, in parts of at most
    /// [`AHEAD_PART`], except what is kept (in memory or on disk) or being fetched
    /// already.
    pub(crate) fn fetch_ahead(&self, full: &str, range: Range<u64>, disk: Option<&ObjectDisk>) {
        let mut parts = Vec::new();
        plan(&mut self.state(), full, range, AHEAD_PART, disk, &mut parts);
        for f in parts {
            let inner = self.inner.clone();
            let full = full.to_string();
            self.runtime.spawn(async move {
                let mut unfinished = Unfinished {
                    inner: inner.clone(),
                    fetches: vec![f.clone()],
                };
                let r = inner.get(&full, Some(f.range.clone())).await;
                unfinished.fetches.clear();
                inner.complete(&f, r);
            });
        }
    }

    /// [`Store::read`]; `ahead`: whether a sequential reader's next bytes may be fetched
    /// ahead of these.
    pub(crate) fn read_ranges(
        &self,
        key: &str,
        ranges: &mut [RangeRead<'_>],
        ahead: bool,
    ) -> Result<()> {
        check_key(key)?;

        let full = self.full(key);
        let check = |known: Option<u64>| {
            for r in ranges.iter() {
                let past = match r.offset.checked_add(r.len) {
                    None => true,
                    Some(end) => known.is_some_and(|size| end > size),
                };
                if past {
                    return Err(past_end(key, r.offset, r.len, known.unwrap_or(0)));
                }
            }
            Ok(())
        };
        check(self.known_size(&full))?;
        let wanted: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.offset..r.offset + r.len)
            .filter(|r| !r.is_empty())
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        // With a disk cache, an object not listed yet is listed here (its size is then
        // known too).
        let mut disk = self.object_disk(key, &full, true)?;
        check(self.known_size(&full))?;
        // Errors name the key relative to the root, as other stores do.
        let relative = |e: Error| match e {
            Error::Corrupt { reason, .. } => Error::corrupt(Place::file(key), reason),
            Error::Io { cause, .. } => Error::Io {
                place: Box::new(Place::file(key)),
                cause,
            },
            e => e,
        };
        // A response that disagrees with the listed version (the object was rewritten)
        // makes the read start over: listed again, then, should it disagree once more
        // (a server whose listings and responses never agree), without the disk.
        let mut attempt = 0;
        let pieces = loop {
            // Whole blocks, so the disk cache can keep every byte fetched.
            let asked: Vec<Range<u64>> = match &disk {
                Some(d) => wanted
                    .iter()
                    .map(|r| parts::widen(r.clone(), d.entry.size()))
                    .collect(),
                None => wanted.clone(),
            };
            match self
                .fetch_ranges(&full, &asked, disk.as_ref())
                .map_err(relative)?
            {
                Outcome::Read(pieces) => break pieces,
                Outcome::Changed => attempt += 1,
            }
            disk = match attempt {
                1 => self.object_disk(key, &full, true).map_err(relative)?,
                _ => {
                    if !self.inner.unreliable_versions.swap(true, Ordering::AcqRel) {
                        log::warn!(
                            "{}: the server's answers for {full} disagreed twice in a row \
                             with its listing: fetched bytes are no longer kept in the disk \
                             cache",
                            self.uri()
                        );
                    }
                    None
                }
            };
        };
        let mut pieces = pieces.into_iter();
        for r in ranges.iter_mut().filter(|r| r.len > 0) {
            let parts = pieces.next().unwrap_or_default();
            r.out.reserve(r.len as usize);
            let (mut pos, end) = (r.offset, r.offset + r.len);
            for (start, bytes) in parts {
                // Pieces in order, each from at most where the last one ended: a gap
                // leaves the range short, which is reported below.
                if start > pos || pos >= end {
                    break;
                }
                let from = (pos - start) as usize;
                let to = ((end.min(start + bytes.len() as u64)) - start) as usize;
                if let Some(part) = bytes.get(from..to) {
                    r.out.extend_from_slice(part);
                    pos = start + to as u64;
                }
            }
            // The server (or a cached object) gave fewer bytes than the range: an error
            // that names them, never a short buffer the caller would decode.
            if pos != end {
                return Err(Error::corrupt(
                    Place::file(key),
                    format!(
                        "bytes {}..{end} were asked, only {}..{pos} came back",
                        r.offset, r.offset
                    ),
                ));
            }
        }
        if !ahead {
            return Ok(());
        }
        // A sequential reader's next bytes, fetched ahead.
        let size = self.known_size(&full).unwrap_or(0);
        let next: Vec<Range<u64>> = {
            let mut state = self.state();
            wanted
                .iter()
                .filter_map(|r| state.windows.on_read(&full, r.clone(), size))
                .collect()
        };
        for range in next {
            let range = match &disk {
                Some(d) => parts::widen(range, d.entry.size()),
                None => range,
            };
            self.fetch_ahead(&full, range, disk.as_ref());
        }
        Ok(())
    }
}
