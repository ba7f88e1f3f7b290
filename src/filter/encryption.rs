//! AES-256-GCM (`05` §3.13): framed like compression, each metadata and data part
//! encrypted separately with its own 12-byte IV and 16-byte tag, no additional
//! authenticated data. The tag is stored in the header, apart from the ciphertext.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, Key, KeyInit, Nonce, Tag};

use super::util::{corrupt, ForFilter, Md, Step};
use super::FilterError;
use crate::format::Reader;

const NAME: &str = "AES_256_GCM";
const IV_LEN: usize = 12;
const TAG_LEN: usize = 16;

struct Part<'a> {
    plaintext: usize,
    ciphertext: usize,
    iv: &'a [u8],
    tag: &'a [u8],
}

pub(crate) fn reverse(md: &[u8], data: &[u8], key: Option<&[u8; 32]>) -> Result<Step, FilterError> {
    let key = key.ok_or(FilterError::KeyNeeded)?;
    let mut r = Reader::new(md);
    let md_parts = r.u32("metadata part count").for_filter(NAME)?;
    let data_parts = r.u32("data part count").for_filter(NAME)?;
    let total = u64::from(md_parts) + u64::from(data_parts);
    r.check_count(total, (8 + IV_LEN + TAG_LEN) as u64, "part count", 0)
        .for_filter(NAME)?;
    let parts = (0..total)
        .map(|_| {
            Ok(Part {
                plaintext: r.u32("plaintext size").for_filter(NAME)? as usize,
                ciphertext: r.u32("ciphertext size").for_filter(NAME)? as usize,
                iv: r.bytes(IV_LEN as u64, "IV").for_filter(NAME)?,
                tag: r.bytes(TAG_LEN as u64, "tag").for_filter(NAME)?,
            })
        })
        .collect::<Result<Vec<_>, FilterError>>()?;
    let encrypted: u64 = parts.iter().map(|p| p.ciphertext as u64).sum();
    if encrypted != data.len() as u64 {
        return Err(corrupt(
            NAME,
            format!(
                "header lists {encrypted} encrypted bytes, but the data is {} bytes",
                data.len()
            ),
        ));
    }

    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key));
    let (md_headers, data_headers) = parts.split_at(md_parts as usize);
    let mut rest = data;
    let mut decrypt_all = |parts: &[Part], kind: &str| -> Result<Vec<u8>, FilterError> {
        let mut out = Vec::with_capacity(parts.iter().map(|p| p.ciphertext).sum());
        for (i, p) in parts.iter().enumerate() {
            let (ciphertext, tail) = rest
                .split_at_checked(p.ciphertext)
                .ok_or_else(|| corrupt(NAME, format!("{kind} part {i} extends past the data")))?;
            rest = tail;
            let mut buf = ciphertext.to_vec();
            cipher
                .decrypt_in_place_detached(
                    Nonce::from_slice(p.iv),
                    b"",
                    &mut buf,
                    Tag::from_slice(p.tag),
                )
                .map_err(|_| FilterError::Decrypt)?;
            if buf.len() != p.plaintext {
                return Err(corrupt(
                    NAME,
                    format!(
                        "{kind} part {i} decrypted to {} bytes, header says {}",
                        buf.len(),
                        p.plaintext
                    ),
                ));
            }
            out.extend_from_slice(&buf);
        }
        Ok(out)
    };
    let new_md = decrypt_all(md_headers, "metadata")?;
    let new_data = decrypt_all(data_headers, "data")?;
    Ok(Step {
        md: Md::New(new_md),
        data: Some(new_data),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::test_support::encrypt_framing;

    const KEY: [u8; 32] = *b"0123456789abcdeF0123456789abcdeF";

    #[test]
    fn decrypts_metadata_and_data_parts() {
        let (md, data) = encrypt_framing(&KEY, &[b"meta"], &[b"hello", b" world"]);
        let step = reverse(&md, &data, Some(&KEY)).unwrap();
        assert!(matches!(step.md, Md::New(ref m) if m == b"meta"));
        assert_eq!(step.data.unwrap(), b"hello world");
    }

    #[test]
    fn wrong_key_missing_key_and_altered_data() {
        let (md, data) = encrypt_framing(&KEY, &[], &[b"secret"]);
        let mut wrong = KEY;
        wrong[0] ^= 1;
        assert_eq!(
            reverse(&md, &data, Some(&wrong)).unwrap_err(),
            FilterError::Decrypt
        );
        assert_eq!(
            reverse(&md, &data, None).unwrap_err(),
            FilterError::KeyNeeded
        );
        let mut altered = data.clone();
        altered[0] ^= 1;
        assert_eq!(
            reverse(&md, &altered, Some(&KEY)).unwrap_err(),
            FilterError::Decrypt
        );
    }

    #[test]
    fn corrupt_headers_are_errors() {
        let (md, data) = encrypt_framing(&KEY, &[], &[b"secret"]);
        assert!(reverse(&md[..20], &data, Some(&KEY)).is_err());
        assert!(reverse(&md, &data[1..], Some(&KEY)).is_err());
        let mut bad = md.clone();
        bad[8..12].copy_from_slice(&7u32.to_le_bytes()); // plaintext size
        assert!(matches!(
            reverse(&bad, &data, Some(&KEY)),
            Err(FilterError::Corrupt { .. })
        ));
    }
}
