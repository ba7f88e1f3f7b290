//! The pieces of the metadata tail: header messages (IV.A.2: Dataspace, Fill Value,
//! Link, Attribute Info, Attribute), the version-2 object header that frames them
//! (IV.A.1.b) and the global heap collection (III.E).

use super::checksum::lookup3;
use super::datatype::H5Type;

/// An HDF5 undefined address (all bits set, III "Undefined address").
pub const UNDEF: u64 = u64::MAX;

/// The smallest global heap collection libhdf5 reads (`H5HG_MINSIZE`): it loads that
/// many bytes before it reads the collection's size.
pub const GCOL_MIN: u64 = 4096;

/// Largest body of one header message: its size is a 2-byte field (IV.A.1.b).
pub const MAX_MESSAGE: usize = 0xffff;

/// Header message types (IV.A.2).
pub mod msg {
    pub const DATASPACE: u8 = 0x01;
    pub const LINK_INFO: u8 = 0x02;
    pub const DATATYPE: u8 = 0x03;
    pub const FILL_VALUE: u8 = 0x05;
    pub const LINK: u8 = 0x06;
    pub const LAYOUT: u8 = 0x08;
    pub const GROUP_INFO: u8 = 0x0a;
    pub const ATTRIBUTE: u8 = 0x0c;
    pub const ATTRIBUTE_INFO: u8 = 0x15;
}

/// A header message's flag: constant (datatype, fill value).
pub const CONSTANT: u8 = 1;

/// An attribute: a name, a type, a shape (`None`: scalar) and its elements' bytes.
#[derive(Debug, Clone)]
pub struct Attr {
    pub name: String,
    pub dtype: H5Type,
    pub dims: Option<Vec<u64>>,
    pub data: Vec<u8>,
}

impl Attr {
    /// A scalar string attribute (NUL-terminated, as netCDF-4 and h5py read text).
    pub fn text(name: &str, value: &str) -> Attr {
        let utf8 = !value.is_ascii();
        let mut data = value.as_bytes().to_vec();
        data.push(0);
        Attr {
            name: name.into(),
            dtype: H5Type::Str {
                len: data.len() as u32,
                utf8,
                nul_term: true,
            },
            dims: None,
            data,
        }
    }

    /// A scalar attribute of one element.
    pub fn scalar(name: &str, dtype: H5Type, data: Vec<u8>) -> Attr {
        Attr {
            name: name.into(),
            dtype,
            dims: None,
            data,
        }
    }

    /// The Attribute message's body (IV.A.2.m, version 3); its name, datatype and
    /// dataspace each have a 2-byte length.
    fn encode(&self) -> Result<Vec<u8>, String> {
        let mut dt = Vec::new();
        self.dtype.encode(&mut dt);
        let ds = dataspace(self.dims.as_deref());
        let two_bytes = |n: usize, what: &str| {
            u16::try_from(n).map_err(|_| format!("a {what} of {n} bytes (at most 65,535)"))
        };
        let mut out = vec![3, 0];
        out.extend_from_slice(&two_bytes(self.name.len() + 1, "name")?.to_le_bytes());
        out.extend_from_slice(&two_bytes(dt.len(), "datatype")?.to_le_bytes());
        out.extend_from_slice(&two_bytes(ds.len(), "dataspace")?.to_le_bytes());
        out.push(u8::from(!self.name.is_ascii())); // name encoding: ASCII or UTF-8
        out.extend_from_slice(self.name.as_bytes());
        out.push(0);
        out.extend_from_slice(&dt);
        out.extend_from_slice(&ds);
        out.extend_from_slice(&self.data);
        Ok(out)
    }
}

/// Attribute Info (IV.A.2.v, version 0: no creation order, no dense storage), then an
/// Attribute message per attribute. libhdf5 counts the attributes of a version-2
/// object header only when it has an Attribute Info message.
pub fn push_attrs(
    messages: &mut Vec<(u8, Vec<u8>, u8)>,
    attrs: &[Attr],
    owner: &str,
) -> Result<(), String> {
    let mut ainfo = vec![0, 0];
    ainfo.extend_from_slice(&UNDEF.to_le_bytes());
    ainfo.extend_from_slice(&UNDEF.to_le_bytes());
    messages.push((msg::ATTRIBUTE_INFO, ainfo, 0));
    for a in attrs {
        let body = a
            .encode()
            .map_err(|why| format!("{owner}: attribute {}: {why}", a.name))?;
        if body.len() > MAX_MESSAGE {
            return Err(format!(
                "{owner}: attribute {} is too large for a header message",
                a.name
            ));
        }
        messages.push((msg::ATTRIBUTE, body, 0));
    }
    Ok(())
}

/// A Dataspace message (IV.A.2.b, version 2): scalar (`None`) or simple, no maximum.
pub fn dataspace(dims: Option<&[u64]>) -> Vec<u8> {
    match dims {
        None => vec![2, 0, 0, 0],
        Some(dims) => {
            let mut out = vec![2, dims.len() as u8, 0, 1];
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out
        }
    }
}

/// A Fill Value message (IV.A.2.f, version 3): space allocated late, written if set;
/// the value where there is one, else the default (zeros).
pub fn fill_value(fill: Option<&[u8]>) -> Vec<u8> {
    let flags = 2 | 2 << 2;
    match fill {
        Some(v) => {
            let mut out = vec![3, flags | 1 << 5];
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
            out
        }
        None => vec![3, flags],
    }
}

/// A Link message (IV.A.2.g, version 1): a hard link, the name's length in 1 or 2
/// bytes, the character set given when the name is not ASCII.
pub fn link(name: &str, addr: u64) -> Result<Vec<u8>, String> {
    let n = name.len();
    if n == 0 || n > 0xffff {
        return Err(format!("link name of {n} bytes"));
    }
    let wide = n > 0xff;
    let utf8 = !name.is_ascii();
    let mut out = vec![1, u8::from(wide) | u8::from(utf8) << 4];
    if utf8 {
        out.push(1);
    }
    if wide {
        out.extend_from_slice(&(n as u16).to_le_bytes());
    } else {
        out.push(n as u8);
    }
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&addr.to_le_bytes());
    Ok(out)
}

/// A version 2 object header (IV.A.1.b): no times, no attribute phase change values,
/// chunk #0's size in 4 bytes, the messages back to back, the checksum.
pub fn object_header(messages: &[(u8, Vec<u8>, u8)], owner: &str) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    for (kind, data, flags) in messages {
        let len = u16::try_from(data.len())
            .map_err(|_| format!("{owner}: a header message of {} bytes", data.len()))?;
        body.push(*kind);
        body.extend_from_slice(&len.to_le_bytes());
        body.push(*flags);
        body.extend_from_slice(data);
    }
    let size =
        u32::try_from(body.len()).map_err(|_| format!("{owner}: an object header over 4 GiB"))?;
    let mut out = b"OHDR".to_vec();
    out.extend_from_slice(&[2, 2]);
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&body);
    let sum = lookup3(&out, 0);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// A global heap collection (III.E) of 8-byte objects (object references), indices from
/// 1, then the free space (object 0) to at least [`GCOL_MIN`] bytes. An index has two
/// bytes: a collection holds at most 65,535 objects, and more is an error rather than
/// indices that wrap to name other objects.
pub fn global_heap(objects: &[u64]) -> Result<Vec<u8>, String> {
    if objects.len() > usize::from(u16::MAX) {
        return Err(format!(
            "{} object references: a global heap collection holds at most 65,535",
            objects.len()
        ));
    }
    let used = 16 + 24 * objects.len() as u64;
    // The free space object needs its 16-byte header.
    let size = (used + 16).max(GCOL_MIN).next_multiple_of(8);
    let mut out = b"GCOL".to_vec();
    out.extend_from_slice(&[1, 0, 0, 0]);
    out.extend_from_slice(&size.to_le_bytes());
    for (i, addr) in objects.iter().enumerate() {
        // At most 65,535 objects (checked above): the index fits.
        out.extend_from_slice(&((i + 1) as u16).to_le_bytes()); // index
        out.extend_from_slice(&1u16.to_le_bytes()); // reference count
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&8u64.to_le_bytes());
        out.extend_from_slice(&addr.to_le_bytes());
    }
    // Object 0: the free space, its size counting its own header.
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&(size - used).to_le_bytes());
    out.resize(size as usize, 0);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_header_frames_its_messages_and_checksums_them() {
        let h = object_header(&[(msg::GROUP_INFO, vec![0, 0], 0)], "/").unwrap();
        assert_eq!(&h[..6], b"OHDR\x02\x02");
        assert_eq!(&h[6..10], &6u32.to_le_bytes());
        assert_eq!(&h[10..16], &[0x0a, 2, 0, 0, 0, 0]);
        assert_eq!(&h[16..], &lookup3(&h[..16], 0).to_le_bytes());
        let big = vec![0; MAX_MESSAGE + 1];
        assert!(object_header(&[(msg::ATTRIBUTE, big, 0)], "/x").is_err());
    }

    /// Two-byte fields never wrap: a 65,536th heap object or a name of 65,535 bytes is
    /// an error, not an index or a length that names something else.
    #[test]
    fn counts_past_two_bytes_are_errors() {
        assert!(global_heap(&vec![8; 65_535]).is_ok());
        let e = global_heap(&vec![8; 65_536]).unwrap_err();
        assert!(e.contains("65,535"), "{e}");
        let long = Attr {
            name: "n".repeat(65_535),
            dtype: H5Type::ObjRef,
            dims: None,
            data: vec![0; 8],
        };
        assert!(long.encode().is_err());
    }
}
