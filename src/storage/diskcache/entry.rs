//! One file of the disk cache: the decoded bytes of one file of the tree at their own
//! offsets (`<name>.data`, so the kernel can serve it by FUSE passthrough as it is),
//! beside an index (`<name>.idx`) that says which blocks hold valid bytes.
//!
//! The index starts with a header naming what the entry holds (the full key text, the
//! file's size, the block size): an entry is used only for exactly that key. Then one
//! 8-byte record per block: the CRC-32 of the block's bytes and its complement. A block
//! counts only when its record is whole (a zeroed or torn record is not) and, when read,
//! its bytes still have that CRC: a block whose bytes were never written, were cut short
//! or flipped on disk is decoded again, never served. A block's bytes are written before
//! its record, so a daemon killed between the two leaves a block that is merely absent.
//!
//! Both files are opened without following a symbolic link ([`super::private`]): a link
//! in place of either is never read, written or truncated through; the entry is made
//! anew.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::private;
use super::usage::Room;
use crate::error::{Error, Result};

/// The unit of validity: reads are widened to whole blocks, so a cold 4 KiB read caches
/// its block, and one record covers this many bytes.
pub const BLOCK: u64 = 64 << 10;

const MAGIC: &[u8; 8] = b"FRAGFSC1";
/// Magic, size (u64), block size (u32), key length (u32).
const FIXED_HEADER: usize = 24;
const RECORD: u64 = 8;
/// A record's word when the block is valid: a flag above the CRC (0 = not valid).
const VALID: u64 = 1 << 32;
/// Beside `VALID` in a block's word in memory (never on disk): this process has matched
/// the block's bytes against its record (it read them back, served them, or wrote
/// them), so the whole-file check before passthrough need not read it again.
const CHECKED: u64 = 1 << 33;

/// An entry's two files, opened.
pub struct Entry {
    data: File,
    index: File,
    /// Where the entry lives, without the `.data`/`.idx` suffix (for log lines).
    base: PathBuf,
    /// The key text it holds: another key at the same place (a fragment of another
    /// version) is another entry.
    key: Box<str>,
    size: u64,
    /// Where the records start in the index.
    records_at: u64,
    /// Per block: `VALID | crc` when the index says the block is valid (with `CHECKED`
    /// once this process matched it), else 0.
    blocks: Vec<AtomicU64>,
    valid: AtomicU64,
    /// Blocks with `CHECKED`.
    checked: AtomicU64,
    /// Every block was matched against its record in this process: the data file may
    /// be handed to the kernel as it is.
    verified: AtomicBool,
    /// Held while the blocks are read back: a caller that comes while a check runs
    /// ([`Entry::verified_data`] on another thread) waits for that answer instead of
    /// reading the file a second time.
    verifying: Mutex<()>,
    /// A check is asked for or under way in the background ([`super::verify`]): not
    /// asked for twice.
    checking: AtomicBool,
    /// The entry was evicted or dropped: it stores nothing more.
    retired: AtomicBool,
    /// When (seconds since the epoch) the index's time was last set to now: a file in
    /// use stays recent for eviction, at one `futimens` a minute at most.
    touched: AtomicU64,
}

/// Seconds since the epoch.
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Appends bytes `[offset, offset + len)` of the file, decoded, to the buffer.
pub type Fill<'a> = dyn FnMut(u64, u64, &mut Vec<u8>) -> Result<()> + 'a;

/// Asked before bytes are kept: room for that many bytes (held while they are written),
/// or `None` to serve them without keeping them ([`super::DiskCache::admit`]).
pub type Store<'a> = dyn FnMut(u64) -> Option<Room> + 'a;

/// What [`Entry::read`] did, for the caller's accounting.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Bytes served from the cache file.
    pub hit: u64,
    /// Bytes decoded (asked of `fill`) and offered to the cache.
    pub filled: u64,
    /// Blocks whose bytes on disk did not match their record.
    pub damaged: u64,
}

pub(super) fn data_path(base: &Path) -> PathBuf {
    with_suffix(base, "data")
}

pub(super) fn index_path(base: &Path) -> PathBuf {
    with_suffix(base, "idx")
}

fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}

fn blocks_of(size: u64) -> u64 {
    size.div_ceil(BLOCK)
}

fn header(key: &str, size: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(FIXED_HEADER + key.len() + 8);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&size.to_le_bytes());
    h.extend_from_slice(&(BLOCK as u32).to_le_bytes());
    h.extend_from_slice(&(key.len() as u32).to_le_bytes());
    h.extend_from_slice(key.as_bytes());
    h.resize(h.len().next_multiple_of(RECORD as usize), 0);
    h
}

/// The length of the index of a file of `size` bytes with key `key`.
pub(super) fn index_len(key: &str, size: u64) -> u64 {
    header(key, size).len() as u64 + blocks_of(size) * RECORD
}

/// The file size the index of the entry at `base` records, read from its header alone
/// (what [`Entry::open`] is then given to check it against); `None` without an index.
pub(super) fn recorded_size(base: &Path) -> Option<u64> {
    let mut head = [0u8; 16];
    private::open_read(&index_path(base))
        .ok()?
        .read_exact_at(&mut head, 0)
        .ok()?;
    let (magic, size) = head.split_at(8);
    (magic == MAGIC).then(|| u64::from_le_bytes(size.try_into().unwrap_or_default()))
}

/// What an index at `path` says, without its key: the file's size, and how many of its
/// blocks are valid (by their records). `None` for what is not an index.
pub(super) fn index_summary(path: &Path) -> Option<(u64, u64, u64)> {
    let mut bytes = Vec::new();
    private::open_read(path)
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() < FIXED_HEADER || &bytes[..8] != MAGIC {
        return None;
    }
    let size = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
    let key_len = u32::from_le_bytes(bytes[20..24].try_into().ok()?) as usize;
    let records = (FIXED_HEADER + key_len).next_multiple_of(RECORD as usize);
    let blocks = bytes.get(records..)?;
    let valid = blocks
        .chunks_exact(RECORD as usize)
        .filter(|r| parse_record(r) != 0)
        .count() as u64;
    Some((size, valid, blocks_of(size)))
}

fn record(crc: u32) -> [u8; 8] {
    let mut r = [0u8; 8];
    r[..4].copy_from_slice(&crc.to_le_bytes());
    r[4..].copy_from_slice(&(!crc).to_le_bytes());
    r
}

fn parse_record(r: &[u8]) -> u64 {
    let crc = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
    let check = u32::from_le_bytes([r[4], r[5], r[6], r[7]]);
    if check == !crc {
        VALID | u64::from(crc)
    } else {
        0
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(crate::error::Place::file(path.display().to_string()), e)
}

/// Opens one of an entry's files: `None` when it is absent, or a symbolic link or not a
/// regular file (said in the log: never followed, the entry is made anew).
fn open_part(path: &Path) -> Result<Option<File>> {
    match private::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) if private::is_link(&e) || e.kind() == ErrorKind::InvalidInput => {
            log::warn!(
                "disk cache: {}: a symbolic link or not a regular file: not followed, made anew",
                path.display()
            );
            Ok(None)
        }
        Err(e) => Err(io(path, e)),
    }
}

impl Entry {
    /// Opens the entry at `base` if its index holds exactly `key` with `size` bytes;
    /// `Ok(None)` when it is absent, or unusable (another key, a damaged header, a data
    /// file of the wrong size): the caller makes a new one.
    pub(super) fn open(base: &Path, key: &str, size: u64) -> Result<Option<Entry>> {
        let index_path = index_path(base);
        let Some(mut index) = open_part(&index_path)? else {
            return Ok(None);
        };
        let expected = header(key, size);
        let n = blocks_of(size);
        let mut bytes = Vec::new();
        index
            .read_to_end(&mut bytes)
            .map_err(|e| io(&index_path, e))?;
        if bytes.len() as u64 != expected.len() as u64 + n * RECORD || !bytes.starts_with(&expected)
        {
            log::warn!(
                "disk cache: {}: not an index of this file (another key, or damaged): made anew",
                index_path.display()
            );
            return Ok(None);
        }
        let data_path = data_path(base);
        let Some(data) = open_part(&data_path)? else {
            return Ok(None);
        };
        let data_len = data.metadata().map_err(|e| io(&data_path, e))?.len();
        if data_len != size {
            log::warn!(
                "disk cache: {}: {data_len} bytes where the file has {size}: made anew",
                data_path.display()
            );
            return Ok(None);
        }
        let blocks: Vec<AtomicU64> = bytes[expected.len()..]
            .chunks_exact(RECORD as usize)
            .map(|r| AtomicU64::new(parse_record(r)))
            .collect();
        let valid = blocks
            .iter()
            .filter(|b| b.load(Ordering::Relaxed) != 0)
            .count() as u64;
        // The index's time is the entry's last use: eviction removes the oldest first.
        let _ = index.set_modified(std::time::SystemTime::now());
        Ok(Some(Entry {
            data,
            index,
            base: base.to_path_buf(),
            key: key.into(),
            size,
            records_at: expected.len() as u64,
            blocks,
            valid: AtomicU64::new(valid),
            checked: AtomicU64::new(0),
            verified: AtomicBool::new(false),
            verifying: Mutex::new(()),
            checking: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            touched: AtomicU64::new(now_secs()),
        }))
    }

    /// Makes a new, empty entry at `base`, where the caller removed whatever was there
    /// (under the cache's lock, which it holds): the data file sized (sparse) and an
    /// index of absent blocks, written aside and renamed into place, so no reader ever
    /// sees half an index. Files are made new (`O_EXCL`, never through a link): one that
    /// appeared meanwhile fails the creation rather than being written through.
    pub(super) fn create(base: &Path, key: &str, size: u64) -> Result<Entry> {
        let index_path = index_path(base);
        let data_path = data_path(base);
        let create = |path: &Path| private::create_new(path).map_err(|e| io(path, e));
        let head = header(key, size);
        let tmp = with_suffix(base, &format!("idx.tmp{}", std::process::id()));
        // One a killed daemon of the same pid left (a link goes itself, unfollowed).
        let _ = std::fs::remove_file(&tmp);
        let made = (|| {
            let data = create(&data_path)?;
            data.set_len(size).map_err(|e| io(&data_path, e))?;
            let index = create(&tmp)?;
            index.write_all_at(&head, 0).map_err(|e| io(&tmp, e))?;
            index
                .set_len(head.len() as u64 + blocks_of(size) * RECORD)
                .map_err(|e| io(&tmp, e))?;
            std::fs::rename(&tmp, &index_path).map_err(|e| io(&index_path, e))?;
            Ok((data, index))
        })();
        let (data, index) = match made {
            Ok(files) => files,
            Err(e) => {
                // Nothing half made stays: never a data file without its index.
                let _ = std::fs::remove_file(&tmp);
                let _ = std::fs::remove_file(&data_path);
                return Err(e);
            }
        };
        Ok(Entry {
            data,
            index,
            base: base.to_path_buf(),
            key: key.into(),
            size,
            records_at: head.len() as u64,
            blocks: (0..blocks_of(size)).map(|_| AtomicU64::new(0)).collect(),
            valid: AtomicU64::new(0),
            checked: AtomicU64::new(0),
            verified: AtomicBool::new(false),
            verifying: Mutex::new(()),
            checking: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            touched: AtomicU64::new(now_secs()),
        })
    }

    /// Marks the entry used now (its index's time), once a minute at most; an entry
    /// whose index was removed meanwhile (evicted by another daemon) is retired then,
    /// so this process opens or makes it again rather than fill removed files.
    pub fn touch(&self) {
        let now = now_secs();
        if now.saturating_sub(self.touched.load(Ordering::Relaxed)) >= 60 {
            self.touched.store(now, Ordering::Relaxed);
            if self.index.metadata().is_ok_and(|m| m.nlink() == 0) {
                self.retire();
                return;
            }
            let _ = self.index.set_modified(std::time::SystemTime::now());
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The key text the entry was made for.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the entry lives (without suffix), for log lines.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Whether every block is in the cache (by the index; see [`Entry::verify`]).
    pub fn is_complete(&self) -> bool {
        self.valid.load(Ordering::Acquire) == self.blocks.len() as u64
    }

    /// Bytes of the file held in the cache (by the index).
    pub fn cached_bytes(&self) -> u64 {
        (0..self.blocks.len() as u64)
            .filter(|&b| self.blocks[b as usize].load(Ordering::Relaxed) != 0)
            .map(|b| self.block_len(b))
            .sum()
    }

    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// The data file, for the kernel to read directly: only once every block was read
    /// back and matched its record (once per process; the caller asks again for each
    /// open, and the answer is kept). One check runs at a time: a caller that comes
    /// during another's waits for it.
    pub fn verified_data(&self) -> Option<&File> {
        if !self.verified.load(Ordering::Acquire) {
            let _one = self.verifying.lock().unwrap_or_else(|e| e.into_inner());
            if !self.verified.load(Ordering::Acquire) {
                if !self.is_complete() || !self.verify() {
                    return None;
                }
                self.verified.store(true, Ordering::Release);
            }
        }
        Some(&self.data)
    }

    /// Whether every block was read back and matched (see [`Entry::verified_data`]).
    pub fn is_verified(&self) -> bool {
        self.verified.load(Ordering::Acquire)
    }

    /// The data file if every block was read back and matched already; never reads it
    /// (the check is [`Entry::verified_data`], in the background: [`super::verify`]).
    pub fn checked_data(&self) -> Option<&File> {
        self.is_verified().then_some(&self.data)
    }

    /// Marks a background check asked for: false if one is already.
    pub(super) fn begin_check(&self) -> bool {
        !self.checking.swap(true, Ordering::AcqRel)
    }

    pub(super) fn end_check(&self) {
        self.checking.store(false, Ordering::Release);
    }

    /// Whether a background check is asked for or under way.
    pub fn is_being_checked(&self) -> bool {
        self.checking.load(Ordering::Acquire)
    }

    /// Reads back every block not matched yet in this process and checks it against its
    /// record; a block that does not match is marked absent (decoded again at its next
    /// read). True when all matched. (A reader served by the daemon matches each block
    /// it reads: a file read whole that way needs no second pass.)
    fn verify(&self) -> bool {
        let mut buf = Vec::new();
        let mut all = true;
        for b in 0..self.blocks.len() as u64 {
            let want = self.blocks[b as usize].load(Ordering::Acquire);
            if want & CHECKED != 0 {
                continue;
            }
            if want == 0 || !self.block_matches(b, want, &mut buf) {
                all = false;
            }
        }
        all
    }

    /// Block `b`, whose word was `word`, matched its record: marked so, and the entry
    /// verified once every block is (unless the word changed meanwhile).
    fn mark_checked(&self, b: u64, word: u64) {
        if word == 0 || word & CHECKED != 0 {
            return;
        }
        let swapped = self.blocks[b as usize].compare_exchange(
            word,
            word | CHECKED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if swapped.is_ok() {
            self.count_checked();
        }
    }

    /// One more block checked: the entry is verified when it was the last.
    fn count_checked(&self) {
        let n = self.checked.fetch_add(1, Ordering::AcqRel) + 1;
        if n == self.blocks.len() as u64 {
            self.verified.store(true, Ordering::Release);
        }
    }

    fn block_len(&self, b: u64) -> u64 {
        BLOCK.min(self.size - b * BLOCK)
    }

    /// Reads block `b` into `buf` and checks it against `want` (its record word); a
    /// mismatch (or a read error) marks it absent.
    fn block_matches(&self, b: u64, want: u64, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        buf.resize(self.block_len(b) as usize, 0);
        let ok = match self.data.read_exact_at(buf, b * BLOCK) {
            Ok(()) => VALID | u64::from(crc32fast::hash(buf)) == want & !CHECKED,
            Err(_) => false,
        };
        if ok {
            self.mark_checked(b, want);
        }
        if !ok {
            log::warn!(
                "disk cache: {}.data, block {b} (bytes {}..{}): damaged on disk (its bytes do \
                 not match the index): decoded again",
                self.base.display(),
                b * BLOCK,
                b * BLOCK + self.block_len(b)
            );
            self.mark_absent(b);
        }
        ok
    }

    fn mark_absent(&self, b: u64) {
        let old = self.blocks[b as usize].swap(0, Ordering::AcqRel);
        if old != 0 {
            self.valid.fetch_sub(1, Ordering::AcqRel);
            if old & CHECKED != 0 {
                self.checked.fetch_sub(1, Ordering::AcqRel);
            }
            self.verified.store(false, Ordering::Release);
            let _ = self
                .index
                .write_all_at(&[0u8; RECORD as usize], self.records_at + b * RECORD);
        }
    }

    /// Appends bytes `[offset, offset + len)` of the file (fewer at its end) to `out`:
    /// the blocks in the cache from its data file, the others from `fill` (asked for
    /// whole runs of absent blocks, so the decoder sees few large reads), which are
    /// then offered to the cache through `store`, which says whether they may be kept.
    pub fn read(
        &self,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
        fill: &mut Fill<'_>,
        store: &mut Store<'_>,
    ) -> Result<ReadOutcome> {
        let end = offset.saturating_add(len).min(self.size);
        let mut outcome = ReadOutcome::default();
        self.touch();
        if offset >= end {
            return Ok(outcome);
        }
        let last = (end - 1) / BLOCK;
        let mut b = offset / BLOCK;
        let mut buf = Vec::new();
        // The part of `[from, from + bytes.len())` that was asked for.
        let wanted = |from: u64, bytes: &[u8], out: &mut Vec<u8>| {
            let lo = offset.max(from);
            let hi = end.min(from + bytes.len() as u64);
            if lo < hi {
                out.extend_from_slice(&bytes[(lo - from) as usize..(hi - from) as usize]);
            }
        };
        while b <= last {
            let want = self.blocks[b as usize].load(Ordering::Acquire);
            if want != 0 {
                if self.block_matches(b, want, &mut buf) {
                    wanted(b * BLOCK, &buf, out);
                    outcome.hit += buf.len() as u64;
                    b += 1;
                    continue;
                }
                outcome.damaged += 1;
            }
            // A run of absent blocks, decoded in one piece.
            let mut e = b;
            while e < last && self.blocks[e as usize + 1].load(Ordering::Acquire) == 0 {
                e += 1;
            }
            let from = b * BLOCK;
            let to = ((e + 1) * BLOCK).min(self.size);
            buf.clear();
            fill(from, to - from, &mut buf)?;
            wanted(from, &buf, out);
            outcome.filled += buf.len() as u64;
            // Room as the disk counts it: whole 4 KiB pages, held while written.
            if buf.len() as u64 == to - from && !self.is_retired() {
                if let Some(_room) = store((to - from).next_multiple_of(4096)) {
                    self.write_blocks(b, &buf);
                }
            }
            b = e + 1;
        }
        Ok(outcome)
    }

    /// Whether the index says block `b` holds the file's bytes (checked against its
    /// record when it is read: [`Entry::read`] fills it again if it does not).
    pub fn holds(&self, b: u64) -> bool {
        self.blocks
            .get(b as usize)
            .is_some_and(|w| w.load(Ordering::Acquire) != 0)
    }

    /// Keeps `bytes`, the file's bytes from `offset` on that the caller got elsewhere
    /// (an object fetched whole or in parts), as far as they cover whole blocks (the
    /// file's last block may be short) that the entry does not hold yet: each run of
    /// them offered through `store`, as in [`Entry::read`]. Returns the bytes written.
    pub fn keep(&self, offset: u64, bytes: &[u8], store: &mut Store<'_>) -> u64 {
        let end = offset.saturating_add(bytes.len() as u64).min(self.size);
        let whole_end = if end == self.size {
            end
        } else {
            end / BLOCK * BLOCK
        };
        self.touch();
        let mut b = offset.div_ceil(BLOCK);
        let mut kept = 0;
        while b * BLOCK < whole_end && !self.is_retired() {
            if self.holds(b) {
                b += 1;
                continue;
            }
            let mut e = b + 1;
            while e * BLOCK < whole_end && !self.holds(e) {
                e += 1;
            }
            let (from, to) = (b * BLOCK, (e * BLOCK).min(whole_end));
            let run = &bytes[(from - offset) as usize..(to - offset) as usize];
            // Room as the disk counts it: whole 4 KiB pages, held while written.
            let Some(_room) = store((to - from).next_multiple_of(4096)) else {
                break;
            };
            self.write_blocks(b, run);
            kept += to - from;
            b = e;
        }
        kept
    }

    /// Writes whole blocks from `first` on: bytes first, then each block's record.
    /// A failed write (a full disk) leaves the blocks absent.
    fn write_blocks(&self, first: u64, bytes: &[u8]) {
        if let Err(e) = self.data.write_all_at(bytes, first * BLOCK) {
            log::warn!("disk cache: {}.data: {e}: not kept", self.base.display());
            return;
        }
        for (i, block) in bytes.chunks(BLOCK as usize).enumerate() {
            let b = first + i as u64;
            let crc = crc32fast::hash(block);
            if self
                .index
                .write_all_at(&record(crc), self.records_at + b * RECORD)
                .is_err()
            {
                return;
            }
            // Checked as written: its record is of the very bytes just written.
            let old =
                self.blocks[b as usize].swap(VALID | CHECKED | u64::from(crc), Ordering::AcqRel);
            if old == 0 {
                self.valid.fetch_add(1, Ordering::AcqRel);
            }
            if old & CHECKED == 0 {
                self.count_checked();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    /// The file every test caches: bytes that differ from block to block.
    fn file(size: usize) -> Vec<u8> {
        (0..size).map(|i| (i * 7 + i / 4099) as u8).collect()
    }

    /// Reads `[offset, offset + len)` through the entry, counting the bytes asked of
    /// the decoder.
    fn read(e: &Entry, bytes: &[u8], offset: u64, len: u64) -> (Vec<u8>, ReadOutcome) {
        let mut out = Vec::new();
        let outcome = e
            .read(
                offset,
                len,
                &mut out,
                &mut |from, n, buf| {
                    let end = (from + n).min(bytes.len() as u64);
                    buf.extend_from_slice(&bytes[from as usize..end as usize]);
                    Ok(())
                },
                &mut |_| Some(Room::unbounded()),
            )
            .unwrap();
        (out, outcome)
    }

    const KEY: &str = "fragfs test\narray /a\nfragment f\nfile x\n";

    #[test]
    fn blocks_read_once_are_served_from_the_cache_across_opens() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("e");
        let bytes = file(3 * BLOCK as usize + 100);
        let size = bytes.len() as u64;
        let e = Entry::create(&base, KEY, size).unwrap();
        let (out, o) = read(&e, &bytes, 5, 10);
        assert_eq!(out, &bytes[5..15]);
        assert_eq!(
            (o.hit, o.filled),
            (0, BLOCK),
            "a small read fills its block"
        );
        let (out, o) = read(&e, &bytes, BLOCK - 3, 6);
        assert_eq!(out, &bytes[BLOCK as usize - 3..BLOCK as usize + 3]);
        assert_eq!((o.hit, o.filled), (BLOCK, BLOCK));
        assert!(!e.is_complete());
        drop(e);
        // Opened again (a remount): the two blocks are there, the rest is filled.
        let e = Entry::open(&base, KEY, size)
            .unwrap()
            .expect("the entry is kept");
        let (out, o) = read(&e, &bytes, 0, size);
        assert_eq!(out, bytes);
        assert_eq!((o.hit, o.filled), (2 * BLOCK, BLOCK + 100));
        assert!(e.is_complete());
        assert!(e.verified_data().is_some());
        let (out, o) = read(&e, &bytes, 0, size + 50);
        assert_eq!(out, bytes);
        assert_eq!((o.hit, o.filled), (size, 0));
    }

    /// What this process wrote, or served from the cache whole, counts as checked: no
    /// second pass over the file before passthrough; a block damaged since is found
    /// by a read, and the file is not verified until it is whole and matched again.
    #[test]
    fn blocks_written_or_served_count_as_checked() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("e");
        let bytes = file(3 * BLOCK as usize + 100);
        let size = bytes.len() as u64;
        let e = Entry::create(&base, KEY, size).unwrap();
        read(&e, &bytes, 0, size);
        assert!(e.is_verified(), "written in this process: checked");
        drop(e);
        let e = Entry::open(&base, KEY, size).unwrap().unwrap();
        assert!(
            e.is_complete() && !e.is_verified(),
            "a new process checks again"
        );
        read(&e, &bytes, 0, 2 * BLOCK);
        assert!(!e.is_verified(), "half served");
        let (out, o) = read(&e, &bytes, 2 * BLOCK, size);
        assert_eq!(out, &bytes[2 * BLOCK as usize..]);
        assert_eq!(o.filled, 0);
        assert!(
            e.is_verified(),
            "served whole: checked, with no pass of its own"
        );
        assert!(e.checked_data().is_some());
    }

    /// Bytes got elsewhere (an object's parts) are kept where they cover whole blocks,
    /// the short last block included, and read back from the cache.
    #[test]
    fn bytes_kept_from_elsewhere_cover_whole_blocks_only() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = file(3 * BLOCK as usize + 100);
        let size = bytes.len() as u64;
        let e = Entry::create(&dir.path().join("e"), KEY, size).unwrap();
        // Bytes 100.. to two blocks and a half: only block 1 is whole.
        let (from, to) = (100, 2 * BLOCK + BLOCK / 2);
        let kept = e.keep(from, &bytes[from as usize..to as usize], &mut |_| {
            Some(Room::unbounded())
        });
        assert_eq!(kept, BLOCK);
        assert!(!e.holds(0) && e.holds(1) && !e.holds(2) && !e.holds(3));
        // The tail, from block 2 on: blocks 2 and the short 3; block 1 is not rewritten.
        let kept = e.keep(BLOCK, &bytes[BLOCK as usize..], &mut |_| {
            Some(Room::unbounded())
        });
        assert_eq!(kept, BLOCK + 100);
        assert!(e.holds(2) && e.holds(3));
        // Refused room keeps nothing.
        assert_eq!(e.keep(0, &bytes, &mut |_| None), 0);
        assert!(!e.holds(0));
        let (out, o) = read(&e, &bytes, BLOCK, size);
        assert_eq!(out, &bytes[BLOCK as usize..]);
        assert_eq!((o.hit, o.filled), (2 * BLOCK + 100, 0));
    }

    #[test]
    fn an_entry_of_another_key_or_size_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("e");
        Entry::create(&base, KEY, 1000).unwrap();
        assert!(Entry::open(&base, KEY, 1000).unwrap().is_some());
        assert!(Entry::open(&base, "fragfs test\nother\n", 1000)
            .unwrap()
            .is_none());
        assert!(Entry::open(&base, KEY, 1001).unwrap().is_none());
        assert!(Entry::open(&dir.path().join("absent"), KEY, 1000)
            .unwrap()
            .is_none());
    }

    /// What a crash, a truncation or a flipped byte leaves: never served, decoded again.
    #[test]
    fn damaged_blocks_and_torn_records_are_decoded_again() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("e");
        let bytes = file(4 * BLOCK as usize);
        let size = bytes.len() as u64;
        let e = Entry::create(&base, KEY, size).unwrap();
        read(&e, &bytes, 0, size);
        assert!(e.is_complete());
        drop(e);
        // Block 0: a flipped byte. Block 1: its record torn (half written). Block 2:
        // zeroed bytes behind a valid record (the data never reached the disk).
        let data = OpenOptions::new()
            .write(true)
            .open(data_path(&base))
            .unwrap();
        data.write_all_at(&[bytes[10] ^ 0x40], 10).unwrap();
        data.write_all_at(&vec![0u8; BLOCK as usize], 2 * BLOCK)
            .unwrap();
        let head = header(KEY, size).len() as u64;
        let index = OpenOptions::new()
            .write(true)
            .open(index_path(&base))
            .unwrap();
        index
            .write_all_at(&[0xff, 0xff], head + RECORD + 5)
            .unwrap();
        let e = Entry::open(&base, KEY, size).unwrap().unwrap();
        assert!(!e.is_complete(), "the torn record does not count");
        assert!(e.verified_data().is_none());
        let (out, o) = read(&e, &bytes, 0, size);
        assert_eq!(out, bytes);
        assert_eq!(o.damaged, 2, "flipped and zeroed blocks detected");
        assert_eq!((o.hit, o.filled), (BLOCK, 3 * BLOCK));
        assert!(e.verified_data().is_some(), "whole again once re-decoded");
        // A truncated data file is not used at all.
        drop(e);
        data.set_len(size - 1).unwrap();
        assert!(Entry::open(&base, KEY, size).unwrap().is_none());
    }

    #[test]
    fn a_decoder_error_fails_the_read_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let e = Entry::create(&dir.path().join("e"), KEY, 100).unwrap();
        let mut out = Vec::new();
        let err = e.read(
            0,
            100,
            &mut out,
            &mut |_, _, _| Err(Error::corrupt(crate::error::Place::file("x"), "bad tile")),
            &mut |_| Some(Room::unbounded()),
        );
        assert!(err.is_err());
        assert!(!e.is_complete());
        assert_eq!(e.cached_bytes(), 0);
    }

    #[test]
    fn refused_room_serves_the_bytes_without_keeping_them() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = file(1000);
        let e = Entry::create(&dir.path().join("e"), KEY, 1000).unwrap();
        let mut out = Vec::new();
        e.read(
            0,
            1000,
            &mut out,
            &mut |from, n, buf| {
                buf.extend_from_slice(&bytes[from as usize..(from + n) as usize]);
                Ok(())
            },
            &mut |_| None,
        )
        .unwrap();
        assert_eq!(out, bytes);
        assert_eq!(e.cached_bytes(), 0);
    }
}
