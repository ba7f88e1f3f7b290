//! `array.h5`: the layout of an HDF5 file whose datasets are other files' bytes as they
//! are, written from the HDF5 File Format Specification version 3.0 (cited below by
//! section). Pure code over byte slices: nothing here reads an array, so every structure
//! is unit-tested without one; `view/tiledb/faces/hdf5.rs` feeds it from a state.
//!
//! The file, in order (`docs/hdf5.md`):
//!
//! 1. the superblock, version 2 (III.A.1), 48 bytes;
//! 2. the data regions: each dataset's elements, CONTIGUOUS and little-endian, starting
//!    on a multiple of 8 (zero bytes between them). Their offsets follow from the
//!    datasets' shapes and types alone, so a read of the data maps to the source files
//!    without the header being known;
//! 3. the metadata tail: the root group's object header (version 2, IV.A.1.b, with Link
//!    Info, Group Info and one Link message per dataset: the "compact" new-style group),
//!    one object header per dataset (Dataspace, Datatype, Fill Value, Data Layout and
//!    Attribute messages), and, where datasets name dimension scales, one global heap
//!    collection (III.E) holding the object references of their `DIMENSION_LIST`s.
//!
//! Every checksum is Jenkins' lookup3 `hashlittle` with an initial value of 0
//! (the specification's Appendix C), [`lookup3`].

/// An HDF5 undefined address (all bits set, III "Undefined address").
const UNDEF: u64 = u64::MAX;

/// The superblock's size: signature 8, 4 one-byte fields, 4 addresses, checksum.
pub const SUPERBLOCK_LEN: u64 = 48;

/// Where data regions start: every one on a multiple of this.
const DATA_ALIGN: u64 = 8;

/// The smallest global heap collection libhdf5 reads (`H5HG_MINSIZE`): it loads that
/// many bytes before it reads the collection's size.
const GCOL_MIN: u64 = 4096;

/// Largest body of one header message: its size is a 2-byte field (IV.A.1.b).
pub const MAX_MESSAGE: usize = 0xffff;

/// An HDF5 datatype (IV.A.2.d, "Datatype Message").
#[derive(Debug, Clone, PartialEq)]
pub enum H5Type {
    /// Class 0, fixed-point: little-endian, `size` bytes.
    Int { size: u32, signed: bool },
    /// Class 1, IEEE floating point, little-endian: 4 or 8 bytes.
    Float { size: u32 },
    /// Class 3, a fixed-length string of `len` bytes, NUL-padded (`nul_term`:
    /// NUL-terminated), ASCII or UTF-8.
    Str {
        len: u32,
        utf8: bool,
        nul_term: bool,
    },
    /// Class 7, an object reference (an object header's address).
    ObjRef,
    /// Class 9, a variable-length sequence of a base type (its elements live in a global
    /// heap).
    Vlen(Box<H5Type>),
    /// Class 6, members at byte offsets within `size` bytes.
    Compound {
        size: u32,
        members: Vec<(String, u32, H5Type)>,
    },
}

impl H5Type {
    /// Bytes per element in the file.
    pub fn size(&self) -> u32 {
        match self {
            H5Type::Int { size, .. } | H5Type::Float { size } => *size,
            H5Type::Str { len, .. } => *len,
            H5Type::ObjRef => 8,
            // Sequence length (4), then a global heap ID: collection address and index.
            H5Type::Vlen(_) => 16,
            H5Type::Compound { size, .. } => *size,
        }
    }

    /// The Datatype message's bytes: class and version, class bit field, size, properties.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let head = |out: &mut Vec<u8>, class: u8, version: u8, bits: [u8; 3], size: u32| {
            out.push(class | version << 4);
            out.extend_from_slice(&bits);
            out.extend_from_slice(&size.to_le_bytes());
        };
        match self {
            H5Type::Int { size, signed } => {
                // Bit 0: byte order (0 little-endian); bit 3: signed.
                head(out, 0, 1, [u8::from(*signed) << 3, 0, 0], *size);
                out.extend_from_slice(&0u16.to_le_bytes()); // bit offset
                out.extend_from_slice(&(*size as u16 * 8).to_le_bytes()); // bit precision
            }
            H5Type::Float { size } => {
                // (sign location, exponent location, exponent size, mantissa size, bias)
                let (sign, eloc, esize, msize, bias): (u8, u8, u8, u8, u32) = match size {
                    4 => (31, 23, 8, 23, 127),
                    _ => (63, 52, 11, 52, 1023),
                };
                // Bits 4-5 of the first byte: mantissa normalization 2 (msb implied).
                head(out, 1, 1, [0x20, sign, 0], *size);
                out.extend_from_slice(&0u16.to_le_bytes());
                out.extend_from_slice(&(*size as u16 * 8).to_le_bytes());
                out.extend_from_slice(&[eloc, esize, 0, msize]);
                out.extend_from_slice(&bias.to_le_bytes());
            }
            H5Type::Str {
                len,
                utf8,
                nul_term,
            } => {
                // Bits 0-3: padding (0 NUL-terminated, 1 NUL-padded); bits 4-7: charset.
                let pad = if *nul_term { 0 } else { 1 };
                head(out, 3, 1, [pad | u8::from(*utf8) << 4, 0, 0], *len);
            }
            H5Type::ObjRef => head(out, 7, 1, [0, 0, 0], 8),
            H5Type::Vlen(base) => {
                // Bits 0-3: type 0, a sequence.
                head(out, 9, 1, [0, 0, 0], 16);
                base.encode(out);
            }
            H5Type::Compound { size, members } => {
                let n = members.len() as u16;
                head(out, 6, 3, [n as u8, (n >> 8) as u8, 0], *size);
                // Version 3: names unpadded, offsets in as few bytes as the size needs.
                let width = offset_width(*size);
                for (name, offset, t) in members {
                    out.extend_from_slice(name.as_bytes());
                    out.push(0);
                    out.extend_from_slice(&offset.to_le_bytes()[..width]);
                    t.encode(out);
                }
            }
        }
    }
}

/// Bytes of a compound member's offset in a version-3 compound datatype: as libhdf5's
/// `H5VM_limit_enc_size(size)`, `log2(size) / 8 + 1`.
fn offset_width(size: u32) -> usize {
    let log2 = 31 - size.max(1).leading_zeros();
    (log2 / 8 + 1) as usize
}

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

/// A dataset of the root group.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Its link name (no `/`).
    pub name: String,
    pub dtype: H5Type,
    pub shape: Vec<u64>,
    /// One element: what a reader shows where nothing was written (Fill Value message).
    pub fill: Option<Vec<u8>>,
    pub attrs: Vec<Attr>,
    /// Set: this dataset is a dimension scale of that name (`CLASS`, `NAME`).
    pub scale: Option<String>,
    /// Per dimension, the index of the dataset that is its scale (empty: none named).
    pub dims: Vec<Option<usize>>,
    /// Bytes the data region keeps for the data, if more than they take (zeros after
    /// them): a sparse state's regions are laid out for an upper bound of its cell
    /// count, so the file's size is known before the cells are counted.
    pub reserve: Option<u64>,
}

impl Dataset {
    /// Bytes of its data region.
    pub fn data_size(&self) -> Result<u64, String> {
        let mut n = u64::from(self.dtype.size());
        for &d in &self.shape {
            n = n
                .checked_mul(d)
                .ok_or_else(|| format!("{}: the data size overflows", self.name))?;
        }
        Ok(n)
    }
}

/// The whole file's description.
#[derive(Debug, Clone, Default)]
pub struct File {
    pub root_attrs: Vec<Attr>,
    pub datasets: Vec<Dataset>,
}

/// Where the datasets' data regions lie.
#[derive(Debug, Clone, PartialEq)]
pub struct Regions {
    /// Per dataset, its first byte and its size.
    pub spans: Vec<(u64, u64)>,
    /// The end of the last region: where the metadata tail starts.
    pub end: u64,
}

/// The data regions of `datasets`: from the end of the superblock, each on a multiple
/// of [`DATA_ALIGN`], in order, each as long as its data or its reserve.
pub fn regions(datasets: &[Dataset]) -> Result<Regions, String> {
    let mut at = SUPERBLOCK_LEN;
    let mut spans = Vec::with_capacity(datasets.len());
    for d in datasets {
        let size = d.data_size()?;
        let end = at
            .checked_add(size.max(d.reserve.unwrap_or(0)))
            .and_then(|e| e.checked_next_multiple_of(DATA_ALIGN))
            .ok_or_else(|| format!("{}: the file's size overflows", d.name))?;
        spans.push((at, size));
        at = end;
    }
    Ok(Regions { spans, end: at })
}

/// The file's metadata: the superblock (its first [`SUPERBLOCK_LEN`] bytes), then the
/// tail that lies at `regions.end`. The file's size is `regions.end + len - 48`.
pub fn metadata(file: &File, regions: &Regions) -> Result<Vec<u8>, String> {
    // Pass 1 with placeholder addresses gives every object's size (an address is
    // always 8 bytes); pass 2 encodes with the real ones.
    let zeros = Addresses {
        datasets: vec![0; file.datasets.len()],
        heap: 0,
    };
    let sized = Tail::encode(file, regions, &zeros)?;
    let mut at = regions.end;
    let root = at;
    at += sized.root.len() as u64;
    let mut datasets = Vec::with_capacity(sized.datasets.len());
    for d in &sized.datasets {
        datasets.push(at);
        at += d.len() as u64;
    }
    let addresses = Addresses { datasets, heap: at };
    let tail = Tail::encode(file, regions, &addresses)?;
    let tail_len: u64 = tail.root.len() as u64
        + tail.datasets.iter().map(|d| d.len() as u64).sum::<u64>()
        + tail.heap.len() as u64;
    let eof = regions
        .end
        .checked_add(tail_len)
        .ok_or("the file's size overflows")?;
    let mut out = superblock(eof, root);
    out.extend_from_slice(&tail.root);
    for d in &tail.datasets {
        out.extend_from_slice(d);
    }
    out.extend_from_slice(&tail.heap);
    Ok(out)
}

/// The superblock, version 2 (III.A.1): offsets and lengths of 8 bytes, base address 0,
/// no superblock extension.
fn superblock(eof: u64, root: u64) -> Vec<u8> {
    let mut out = b"\x89HDF\r\n\x1a\n".to_vec();
    out.extend_from_slice(&[2, 8, 8, 0]);
    for a in [0, UNDEF, eof, root] {
        out.extend_from_slice(&a.to_le_bytes());
    }
    let sum = lookup3(&out, 0);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

struct Addresses {
    datasets: Vec<u64>,
    heap: u64,
}

/// The encoded objects of the tail, in file order.
struct Tail {
    root: Vec<u8>,
    datasets: Vec<Vec<u8>>,
    heap: Vec<u8>,
}

/// Header message types (IV.A.2).
mod msg {
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
const CONSTANT: u8 = 1;

impl Tail {
    fn encode(file: &File, regions: &Regions, at: &Addresses) -> Result<Tail, String> {
        // The global heap: one object per (dataset, dimension) with a scale, holding
        // the scale's object reference. Index 0 is the free space.
        let mut heap_objects: Vec<u64> = Vec::new();
        let mut dim_lists: Vec<Vec<u8>> = Vec::with_capacity(file.datasets.len());
        for d in &file.datasets {
            let mut list = Vec::new();
            for scale in &d.dims {
                match scale {
                    Some(s) => {
                        let target = *at
                            .datasets
                            .get(*s)
                            .ok_or_else(|| format!("{}: no dataset #{s} for a scale", d.name))?;
                        heap_objects.push(target);
                        list.extend_from_slice(&1u32.to_le_bytes());
                        list.extend_from_slice(&at.heap.to_le_bytes());
                        list.extend_from_slice(&(heap_objects.len() as u32).to_le_bytes());
                    }
                    None => list.extend_from_slice(&[0; 16]),
                }
            }
            dim_lists.push(list);
        }
        let mut datasets = Vec::with_capacity(file.datasets.len());
        for (i, d) in file.datasets.iter().enumerate() {
            let (start, size) = regions
                .spans
                .get(i)
                .copied()
                .ok_or_else(|| format!("{}: no data region", d.name))?;
            let mut attrs: Vec<Attr> = Vec::new();
            if let Some(name) = &d.scale {
                attrs.push(Attr::text("CLASS", "DIMENSION_SCALE"));
                attrs.push(Attr::text("NAME", name));
                // REFERENCE_LIST (Dimension Scale spec): every (dataset, dimension) it
                // is the scale of.
                let mut refs = Vec::new();
                for (j, other) in file.datasets.iter().enumerate() {
                    for (k, s) in other.dims.iter().enumerate() {
                        if *s == Some(i) {
                            refs.extend_from_slice(&at.datasets[j].to_le_bytes());
                            refs.extend_from_slice(&(k as i32).to_le_bytes());
                        }
                    }
                }
                if !refs.is_empty() {
                    attrs.push(Attr {
                        name: "REFERENCE_LIST".into(),
                        dtype: H5Type::Compound {
                            size: 12,
                            members: vec![
                                ("dataset".into(), 0, H5Type::ObjRef),
                                (
                                    "dimension".into(),
                                    8,
                                    H5Type::Int {
                                        size: 4,
                                        signed: true,
                                    },
                                ),
                            ],
                        },
                        dims: Some(vec![refs.len() as u64 / 12]),
                        data: refs,
                    });
                }
            }
            if d.dims.iter().any(Option::is_some) {
                attrs.push(Attr {
                    name: "DIMENSION_LIST".into(),
                    dtype: H5Type::Vlen(Box::new(H5Type::ObjRef)),
                    dims: Some(vec![d.dims.len() as u64]),
                    data: dim_lists[i].clone(),
                });
            }
            attrs.extend(d.attrs.iter().cloned());
            let mut messages = Vec::new();
            messages.push((msg::DATASPACE, dataspace(Some(&d.shape)), 0));
            let mut dt = Vec::new();
            d.dtype.encode(&mut dt);
            messages.push((msg::DATATYPE, dt, CONSTANT));
            messages.push((msg::FILL_VALUE, fill_value(d.fill.as_deref()), CONSTANT));
            // Data Layout, version 3, class 1 (contiguous): address and size. An empty
            // dataset has no storage (undefined address).
            let mut layout = vec![3, 1];
            let addr = if size == 0 { UNDEF } else { start };
            layout.extend_from_slice(&addr.to_le_bytes());
            layout.extend_from_slice(&size.to_le_bytes());
            messages.push((msg::LAYOUT, layout, 0));
            push_attrs(&mut messages, &attrs, &d.name)?;
            datasets.push(object_header(&messages, &d.name)?);
        }
        // The root group: Link Info and Group Info (a new-style group, links in the
        // header), a Link per dataset, then the attributes.
        let mut messages = Vec::new();
        let mut linfo = vec![0, 0];
        linfo.extend_from_slice(&UNDEF.to_le_bytes()); // fractal heap
        linfo.extend_from_slice(&UNDEF.to_le_bytes()); // name index B-tree
        messages.push((msg::LINK_INFO, linfo, 0));
        messages.push((msg::GROUP_INFO, vec![0, 0], 0));
        for (d, addr) in file.datasets.iter().zip(&at.datasets) {
            messages.push((msg::LINK, link(&d.name, *addr)?, 0));
        }
        push_attrs(&mut messages, &file.root_attrs, "/")?;
        let root = object_header(&messages, "/")?;
        let heap = if heap_objects.is_empty() {
            Vec::new()
        } else {
            global_heap(&heap_objects)?
        };
        Ok(Tail {
            root,
            datasets,
            heap,
        })
    }
}

/// Attribute Info (IV.A.2.v, version 0: no creation order, no dense storage), then an
/// Attribute message per attribute. libhdf5 counts the attributes of a version-2
/// object header only when it has an Attribute Info message.
fn push_attrs(
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
fn dataspace(dims: Option<&[u64]>) -> Vec<u8> {
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
fn fill_value(fill: Option<&[u8]>) -> Vec<u8> {
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
fn link(name: &str, addr: u64) -> Result<Vec<u8>, String> {
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
fn object_header(messages: &[(u8, Vec<u8>, u8)], owner: &str) -> Result<Vec<u8>, String> {
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
fn global_heap(objects: &[u64]) -> Result<Vec<u8>, String> {
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

/// What byte range of the file a piece of a read is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes `[from, from + len)` of the metadata (as [`metadata`] returns it).
    Meta { from: u64, len: u64 },
    /// Bytes `[from, from + len)` of dataset `index`'s data.
    Data { index: usize, from: u64, len: u64 },
    /// Zero bytes (padding after a data region).
    Zero(u64),
}

/// Bytes `[offset, offset + len)` of the file (clipped to its end) as pieces in order.
/// `meta_len` is the length of what [`metadata`] returned.
pub fn pieces(regions: &Regions, meta_len: u64, offset: u64, len: u64) -> Vec<Piece> {
    let sb = SUPERBLOCK_LEN.min(meta_len);
    let size = regions.end + meta_len.saturating_sub(sb);
    let end = offset.saturating_add(len).min(size);
    let mut out = Vec::new();
    let mut at = offset;
    // (region start, region end, what) in file order, covering [0, size).
    let mut push = |at: &mut u64, upto: u64, piece: &dyn Fn(u64, u64) -> Piece| {
        if *at < upto && *at < end {
            let stop = upto.min(end);
            out.push(piece(*at, stop - *at));
            *at = stop;
        }
    };
    push(&mut at, sb, &|a, n| Piece::Meta { from: a, len: n });
    for (index, &(start, size)) in regions.spans.iter().enumerate() {
        if at >= end {
            break;
        }
        push(&mut at, start, &|_, n| Piece::Zero(n));
        push(&mut at, start + size, &|a, n| Piece::Data {
            index,
            from: a - start,
            len: n,
        });
    }
    push(&mut at, regions.end, &|_, n| Piece::Zero(n));
    let tail = regions.end;
    push(&mut at, size, &|a, n| Piece::Meta {
        from: a - tail + sb,
        len: n,
    });
    out
}

/// Bob Jenkins' lookup3 `hashlittle` (public domain, 2006), byte by byte as libhdf5's
/// `H5_checksum_lookup3`: the checksum of every version-2 structure.
pub fn lookup3(key: &[u8], initval: u32) -> u32 {
    // lookup3's `mix` and `final` are each one step repeated on rotating roles of the
    // state (a, b, c) = s[0], s[1], s[2], with these rotations:
    // mix:   s[x] -= s[y]; s[x] ^= rot(s[y], k); s[y] += s[z]
    const MIX: [(usize, usize, usize, u32); 6] = [
        (0, 2, 1, 4),
        (1, 0, 2, 6),
        (2, 1, 0, 8),
        (0, 2, 1, 16),
        (1, 0, 2, 19),
        (2, 1, 0, 4),
    ];
    // final: s[x] ^= s[y]; s[x] -= rot(s[y], k)
    const FINAL: [(usize, usize, u32); 7] = [
        (2, 1, 14),
        (0, 2, 11),
        (1, 0, 25),
        (2, 1, 16),
        (0, 2, 4),
        (1, 0, 14),
        (2, 1, 24),
    ];
    let init = 0xdead_beefu32
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    let mut s = [init; 3];
    let word = |k: &[u8]| -> u32 {
        k.iter()
            .enumerate()
            .fold(0u32, |w, (i, &x)| w.wrapping_add(u32::from(x) << (8 * i)))
    };
    let mut rest = key;
    while rest.len() > 12 {
        for (i, v) in s.iter_mut().enumerate() {
            *v = v.wrapping_add(word(&rest[4 * i..4 * i + 4]));
        }
        for (x, y, z, k) in MIX {
            s[x] = s[x].wrapping_sub(s[y]);
            s[x] ^= s[y].rotate_left(k);
            s[y] = s[y].wrapping_add(s[z]);
        }
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return s[2];
    }
    for (i, v) in s.iter_mut().enumerate() {
        let from = 4 * i;
        *v = v.wrapping_add(word(
            rest.get(from..rest.len().min(from + 4)).unwrap_or(&[]),
        ));
    }
    for (x, y, k) in FINAL {
        s[x] ^= s[y];
        s[x] = s[x].wrapping_sub(s[y].rotate_left(k));
    }
    s[2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup3_matches_the_published_vectors() {
        // From lookup3.c's driver5().
        assert_eq!(lookup3(b"", 0), 0xdead_beef);
        assert_eq!(lookup3(b"", 0xdead_beef), 0xbd5b_7dde);
        assert_eq!(lookup3(b"Four score and seven years ago", 0), 0x1777_0551);
        assert_eq!(lookup3(b"Four score and seven years ago", 1), 0xcd62_8161);
    }

    fn f64_dataset(name: &str, n: u64) -> Dataset {
        Dataset {
            name: name.into(),
            dtype: H5Type::Float { size: 8 },
            shape: vec![n],
            fill: Some(f64::NAN.to_le_bytes().to_vec()),
            attrs: vec![],
            scale: None,
            dims: vec![],
            reserve: None,
        }
    }

    #[test]
    fn a_reserve_keeps_room_after_the_data() {
        let mut a = f64_dataset("a", 1);
        a.reserve = Some(40);
        let r = regions(&[a, f64_dataset("b", 1)]).unwrap();
        assert_eq!(r.spans, vec![(48, 8), (88, 8)]);
        assert_eq!(
            pieces(&r, 60, 50, 40),
            vec![
                Piece::Data {
                    index: 0,
                    from: 2,
                    len: 6
                },
                Piece::Zero(32),
                Piece::Data {
                    index: 1,
                    from: 0,
                    len: 2
                },
            ]
        );
    }

    #[test]
    fn data_regions_follow_the_superblock_aligned() {
        let mut a = f64_dataset("a", 3);
        a.dtype = H5Type::Int {
            size: 1,
            signed: false,
        };
        let r = regions(&[a, f64_dataset("b", 2)]).unwrap();
        assert_eq!(r.spans, vec![(48, 3), (56, 16)]);
        assert_eq!(r.end, 72);
        let mut huge = f64_dataset("h", u64::MAX / 4);
        huge.shape.push(3);
        assert!(regions(&[huge]).unwrap_err().contains("h:"));
    }

    #[test]
    fn the_superblock_is_byte_for_byte_version_2() {
        let s = superblock(0x1234, 0x100);
        assert_eq!(s.len() as u64, SUPERBLOCK_LEN);
        assert_eq!(&s[..12], b"\x89HDF\r\n\x1a\n\x02\x08\x08\x00");
        assert_eq!(&s[12..20], &0u64.to_le_bytes()); // base address
        assert_eq!(&s[20..28], &[0xff; 8]); // no extension
        assert_eq!(&s[28..36], &0x1234u64.to_le_bytes());
        assert_eq!(&s[36..44], &0x100u64.to_le_bytes());
        assert_eq!(&s[44..], &lookup3(&s[..44], 0).to_le_bytes());
    }

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

    #[test]
    fn datatypes_encode_as_the_spec_lays_them_out() {
        let mut out = Vec::new();
        H5Type::Int {
            size: 2,
            signed: true,
        }
        .encode(&mut out);
        assert_eq!(out, [0x10, 0x08, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0]);
        out.clear();
        H5Type::Float { size: 8 }.encode(&mut out);
        assert_eq!(
            out,
            [0x11, 0x20, 63, 0, 8, 0, 0, 0, 0, 0, 64, 0, 52, 11, 0, 52, 0xff, 3, 0, 0]
        );
        out.clear();
        H5Type::Str {
            len: 5,
            utf8: true,
            nul_term: false,
        }
        .encode(&mut out);
        assert_eq!(out, [0x13, 0x11, 0, 0, 5, 0, 0, 0]);
        assert_eq!(offset_width(12), 1);
        assert_eq!(offset_width(256), 2);
    }

    #[test]
    fn a_file_places_headers_after_the_data_and_pieces_map_reads() {
        let file = File {
            root_attrs: vec![Attr::text("title", "t")],
            datasets: vec![f64_dataset("x", 3), f64_dataset("y", 1)],
        };
        let r = regions(&file.datasets).unwrap();
        assert_eq!(r.spans, vec![(48, 24), (72, 8)]);
        let meta = metadata(&file, &r).unwrap();
        let size = r.end + meta.len() as u64 - SUPERBLOCK_LEN;
        // The superblock's end of file and root address.
        assert_eq!(&meta[28..36], &size.to_le_bytes());
        assert_eq!(&meta[36..44], &r.end.to_le_bytes());
        assert_eq!(&meta[48..52], b"OHDR");
        // The whole file, read in one piece per region.
        let all = pieces(&r, meta.len() as u64, 0, u64::MAX);
        assert_eq!(
            all,
            vec![
                Piece::Meta { from: 0, len: 48 },
                Piece::Data {
                    index: 0,
                    from: 0,
                    len: 24
                },
                Piece::Data {
                    index: 1,
                    from: 0,
                    len: 8
                },
                Piece::Meta {
                    from: 48,
                    len: meta.len() as u64 - 48
                },
            ]
        );
        // A read inside a region, and one across padding into the next.
        assert_eq!(
            pieces(&r, meta.len() as u64, 50, 4),
            vec![Piece::Data {
                index: 0,
                from: 2,
                len: 4
            }]
        );
        let mut one = f64_dataset("a", 1);
        one.dtype = H5Type::Int {
            size: 1,
            signed: true,
        };
        let r2 = regions(&[one, f64_dataset("b", 1)]).unwrap();
        assert_eq!(
            pieces(&r2, 100, 48, 10),
            vec![
                Piece::Data {
                    index: 0,
                    from: 0,
                    len: 1
                },
                Piece::Zero(7),
                Piece::Data {
                    index: 1,
                    from: 0,
                    len: 2
                },
            ]
        );
        assert!(pieces(&r, meta.len() as u64, size, 10).is_empty());
    }

    #[test]
    fn dimension_lists_point_into_one_global_heap() {
        let mut x = f64_dataset("x", 2);
        x.scale = Some("x".into());
        let mut v = f64_dataset("v", 2);
        v.dims = vec![Some(0)];
        let file = File {
            root_attrs: vec![],
            datasets: vec![x, v],
        };
        let r = regions(&file.datasets).unwrap();
        let meta = metadata(&file, &r).unwrap();
        let gcol = meta.windows(4).position(|w| w == b"GCOL").unwrap();
        assert_eq!(
            meta.len() - gcol,
            GCOL_MIN as usize,
            "the heap ends the file"
        );
        assert_eq!(&meta[gcol + 8..gcol + 16], &GCOL_MIN.to_le_bytes());
        // Object 1 is x's object header address (right after the root's).
        let x_addr = u64::from_le_bytes(meta[gcol + 32..gcol + 40].try_into().unwrap());
        assert_eq!(&meta[(x_addr - r.end + 48) as usize..][..4], b"OHDR");
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
