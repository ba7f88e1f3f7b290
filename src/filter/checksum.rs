//! CHECKSUM_MD5 / CHECKSUM_SHA256 (`05` §3.12): the data passes through; the header
//! lists a checksummed size and digest per metadata part (covering the metadata that
//! follows the header) and per data part. TileDB can skip verification; fragfs always
//! verifies, since a silently wrong byte is worse than a refused read.

use md5::{Digest, Md5};
use sha2::Sha256;

use super::util::{corrupt, ForFilter, Md, Step};
use super::FilterError;
use crate::format::Reader;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Algorithm {
    Md5,
    Sha256,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "CHECKSUM_MD5",
            Algorithm::Sha256 => "CHECKSUM_SHA256",
        }
    }

    fn digest_len(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Sha256 => 32,
        }
    }

    fn digest(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Algorithm::Md5 => Md5::digest(bytes).to_vec(),
            Algorithm::Sha256 => Sha256::digest(bytes).to_vec(),
        }
    }
}

pub(crate) fn reverse(md: &[u8], data: &[u8], algo: Algorithm) -> Result<Step, FilterError> {
    let name = algo.name();
    let mut r = Reader::new(md);
    let md_parts = r.u32("metadata part count").for_filter(name)?;
    let data_parts = r.u32("data part count").for_filter(name)?;
    let total = u64::from(md_parts) + u64::from(data_parts);
    let entry_len = 8 + algo.digest_len() as u64;
    r.check_count(total, entry_len, "part count", 0)
        .for_filter(name)?;
    let entries = (0..total)
        .map(|_| {
            let size = r.u64("checksummed size").for_filter(name)?;
            let digest = r
                .bytes(algo.digest_len() as u64, "digest")
                .for_filter(name)?;
            Ok((size, digest))
        })
        .collect::<Result<Vec<_>, FilterError>>()?;
    let header_len = r.offset() as usize;
    let (md_entries, data_entries) = entries.split_at(md_parts as usize);

    verify(algo, r.rest(), md_entries, "metadata")?;
    verify(algo, data, data_entries, "data")?;
    Ok(Step {
        md: Md::Tail(header_len),
        data: None,
    })
}

/// Checks consecutive slices of `bytes`, which the listed sizes must cover exactly.
fn verify(
    algo: Algorithm,
    bytes: &[u8],
    entries: &[(u64, &[u8])],
    kind: &str,
) -> Result<(), FilterError> {
    let name = algo.name();
    let total: u64 = entries
        .iter()
        .map(|&(size, _)| size)
        .fold(0, u64::saturating_add);
    if total != bytes.len() as u64 {
        return Err(corrupt(
            name,
            format!(
                "{kind} checksums cover {total} bytes, but there are {}",
                bytes.len()
            ),
        ));
    }
    let mut rest = bytes;
    for (i, &(size, digest)) in entries.iter().enumerate() {
        let (part, tail) = usize::try_from(size)
            .ok()
            .and_then(|s| rest.split_at_checked(s))
            .ok_or_else(|| corrupt(name, format!("{kind} part {i} extends past the bytes")))?;
        rest = tail;
        if algo.digest(part) != digest {
            return Err(FilterError::ChecksumMismatch {
                filter: name,
                part: format!("{kind} part {i}"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::checksum_header;

    #[test]
    fn md5_and_sha256_verify_and_pass_data_through() {
        let earlier_md = b"hdr!".to_vec();
        let data = b"some tile bytes".to_vec();
        for algo in [Algorithm::Md5, Algorithm::Sha256] {
            let digest = |b: &[u8]| algo.digest(b);
            let mut md = checksum_header(&[&earlier_md], &[&data], digest);
            let header = md.len();
            md.extend_from_slice(&earlier_md);
            let step = reverse(&md, &data, algo).unwrap();
            assert!(step.data.is_none());
            assert!(matches!(step.md, Md::Tail(n) if n == header));
        }
    }

    #[test]
    fn mismatch_names_the_part() {
        let data = b"0123456789".to_vec();
        for algo in [Algorithm::Md5, Algorithm::Sha256] {
            let md = checksum_header(&[], &[&data[..4], &data[4..]], |b| algo.digest(b));
            let mut altered = data.clone();
            altered[7] ^= 1;
            let err = reverse(&md, &altered, algo).unwrap_err();
            assert_eq!(
                err,
                FilterError::ChecksumMismatch {
                    filter: algo.name(),
                    part: "data part 1".into()
                }
            );
            let mut md_altered = checksum_header(&[b"xy"], &[&data], |b| algo.digest(b));
            md_altered.extend(b"xz");
            let err = reverse(&md_altered, &data, algo).unwrap_err();
            assert!(err.to_string().contains("metadata part 0"), "{err}");
        }
    }

    #[test]
    fn corrupt_headers_are_errors() {
        let md = checksum_header(&[], &[b"abc"], |b| Md5::digest(b).to_vec());
        assert!(reverse(&md[..md.len() - 1], b"abc", Algorithm::Md5).is_err());
        assert!(reverse(&md, b"abcd", Algorithm::Md5).is_err());
        let mut huge = md.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(reverse(&huge, b"abc", Algorithm::Md5).is_err());
        assert!(reverse(&[0xff; 8], b"", Algorithm::Sha256).is_err());
    }
}
