//! The metadata of the file: the superblock, version 2 (III.A.1), and the tail after
//! the data regions: the root group's object header, one per dataset, and the global
//! heap of the dimension lists.

use super::checksum::lookup3;
use super::datatype::H5Type;
use super::layout::{File, Regions};
use super::messages::{
    dataspace, fill_value, global_heap, link, msg, object_header, push_attrs, Attr, CONSTANT, UNDEF,
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::hdf5::layout::{pieces, regions, Dataset, Piece, SUPERBLOCK_LEN};
    use crate::encode::hdf5::messages::GCOL_MIN;

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
    fn a_file_places_headers_after_the_data_and_pieces_map_reads() {
        let file = File {
            root_attrs: vec![Attr::text("title", "t")],
            datasets: vec![Dataset::test_f64("x", 3), Dataset::test_f64("y", 1)],
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
        let mut one = Dataset::test_f64("a", 1);
        one.dtype = H5Type::Int {
            size: 1,
            signed: true,
        };
        let r2 = regions(&[one, Dataset::test_f64("b", 1)]).unwrap();
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
        let mut x = Dataset::test_f64("x", 2);
        x.scale = Some("x".into());
        let mut v = Dataset::test_f64("v", 2);
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
}
