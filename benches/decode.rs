//! Decode throughput of fragfs's chunk un-filtering against the bare codec.
//!
//! ```sh
//! cargo bench --bench decode            # or: bash scripts/bench.sh (runs it too)
//! ```
//!
//! One 8 MiB tile is cut into 64 KiB chunks, as TileDB writes them, filtered forward
//! with TileDB's framing, then decoded over and over by
//! - fragfs: `fragfs::filter::unfilter_chunk`, the public entry point every read uses;
//! - the peers: the codec crate fragfs links, decompressing the same bytes
//!   (`zstd::bulk::decompress`, which makes a new context per call as fragfs does, and
//!   a reused `zstd::bulk::Decompressor`; `lz4_flex::block::decompress`; a plain copy
//!   when the pipeline is empty).
//!
//! The ratio fragfs / peer is the share of the codec's speed that survives the
//! pipeline (header parsing, buffers, copies). Each figure is the median of several
//! rounds of at least 0.3 s, fragfs's and the peers' rounds alternating. Output lines
//! start with `decode ` (bench.sh parses them).
//!
//! `cargo test --all-targets` runs this binary too, without `--bench`: it then only
//! checks that both sides decode every chunk to the original bytes, in one quick pass.

use std::cell::RefCell;
use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use fragfs::filter::{unfilter_chunk, ChunkContext};
use fragfs::format::{Datatype, Filter, FilterPipeline};

const CHUNK: usize = 64 << 10;
const TILE: usize = 8 << 20;

/// How long to measure: rounds (the median is kept) of at least `min_round` each.
#[derive(Clone, Copy)]
struct Timing {
    rounds: usize,
    min_round: Duration,
}

const FULL: Timing = Timing {
    rounds: 7,
    min_round: Duration::from_millis(300),
};
/// Under `cargo test`: one pass, the correctness check is what matters.
const SMOKE: Timing = Timing {
    rounds: 1,
    min_round: Duration::ZERO,
};

type Res<T> = Result<T, Box<dyn Error>>;

/// xorshift64*: deterministic data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-0.5, 0.5).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

/// The benchmark arrays' data, as bytes of one tile.
fn walk_f64(rng: &mut Rng) -> Vec<u8> {
    let mut x = 100.0f64;
    (0..TILE / 8)
        .flat_map(|_| {
            x += rng.unit() * 0.03;
            ((x * 1e4).round() / 1e4).to_le_bytes()
        })
        .collect()
}

fn counter_i64(rng: &mut Rng) -> Vec<u8> {
    let mut c = 0i64;
    (0..TILE / 8)
        .flat_map(|_| {
            let r = rng.next();
            c += 1 + (r % 3) as i64 + if r.is_multiple_of(1000) { 5000 } else { 0 };
            c.to_le_bytes()
        })
        .collect()
}

fn random_i32(rng: &mut Rng) -> Vec<u8> {
    (0..TILE / 4)
        .flat_map(|_| (rng.next() as u32).to_le_bytes())
        .collect()
}

/// One filtered chunk as it lies in a tile: metadata, data, and what it decodes to.
struct Chunk {
    md: Vec<u8>,
    data: Vec<u8>,
    plain: Vec<u8>,
}

/// TileDB's compression framing with one data part and no metadata part (the filter
/// is the only one): counts, then the part's (uncompressed, compressed) sizes.
fn framed(plain: &[u8], compressed: Vec<u8>) -> Res<Chunk> {
    let mut md = Vec::with_capacity(16);
    for n in [0, 1, plain.len(), compressed.len()] {
        md.extend_from_slice(&u32::try_from(n)?.to_le_bytes());
    }
    Ok(Chunk {
        md,
        data: compressed,
        plain: plain.to_vec(),
    })
}

/// The bare codec on one chunk's data, giving its decoded bytes.
type Decode = Box<dyn Fn(&Chunk) -> Res<Vec<u8>>>;

struct Case {
    name: &'static str,
    pipeline: FilterPipeline,
    ctx: ChunkContext,
    chunks: Vec<Chunk>,
    /// Named peers: the codec crate decoding the same chunks.
    peers: Vec<(&'static str, Decode)>,
}

fn case(
    name: &'static str,
    filters: Vec<Filter>,
    field_type: Datatype,
    tile: &[u8],
    forward: impl Fn(&[u8]) -> Res<Chunk>,
    peers: Vec<(&'static str, Decode)>,
) -> Res<Case> {
    Ok(Case {
        name,
        pipeline: FilterPipeline {
            max_chunk_size: CHUNK as u32,
            filters,
        },
        ctx: ChunkContext {
            field_type,
            cell_size: field_type.size(),
            format_version: 22,
            key: None,
        },
        chunks: tile.chunks(CHUNK).map(forward).collect::<Res<_>>()?,
        peers,
    })
}

/// Checks that `decode` gives back every chunk's original bytes (untimed; also warms
/// the caches).
fn check(case: &Case, who: &str, decode: &dyn Fn(&Chunk) -> Res<Vec<u8>>) -> Res<()> {
    for c in &case.chunks {
        if decode(c)? != c.plain {
            return Err(format!(
                "{}, {who}: decoded bytes differ from the original",
                case.name
            )
            .into());
        }
    }
    Ok(())
}

/// One round: MB/s (10^6 bytes) of `decode` over every chunk of `case`, repeated for at
/// least `min_round` (and at least once).
fn round(case: &Case, min_round: Duration, decode: &dyn Fn(&Chunk) -> Res<Vec<u8>>) -> Res<f64> {
    let bytes: usize = case.chunks.iter().map(|c| c.plain.len()).sum();
    let start = Instant::now();
    let mut done = 0usize;
    while done == 0 || start.elapsed() < min_round {
        for c in &case.chunks {
            black_box(decode(black_box(c))?);
        }
        done += bytes;
    }
    Ok(done as f64 / start.elapsed().as_secs_f64() / 1e6)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Median MB/s of fragfs and of each peer. Their rounds alternate, so a busy moment of
/// a shared machine slows both alike instead of skewing the ratio.
fn measure(case: &Case, timing: Timing) -> Res<(f64, Vec<f64>)> {
    let fragfs = |c: &Chunk| -> Res<Vec<u8>> {
        let len = u32::try_from(c.plain.len())?;
        Ok(unfilter_chunk(
            &case.pipeline,
            &case.ctx,
            &c.md,
            &c.data,
            len,
        )?)
    };
    check(case, "fragfs", &fragfs)?;
    for (name, peer) in &case.peers {
        check(case, name, peer)?;
    }
    let mut ours = Vec::with_capacity(timing.rounds);
    let mut theirs = vec![Vec::with_capacity(timing.rounds); case.peers.len()];
    for _ in 0..timing.rounds {
        ours.push(round(case, timing.min_round, &fragfs)?);
        for ((_, peer), rates) in case.peers.iter().zip(&mut theirs) {
            rates.push(round(case, timing.min_round, peer)?);
        }
    }
    Ok((median(ours), theirs.into_iter().map(median).collect()))
}

fn main() -> Res<()> {
    // `cargo bench` passes `--bench`; `cargo test` does not.
    let timing = if std::env::args().any(|a| a == "--bench") {
        FULL
    } else {
        SMOKE
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // zstd::bulk::decompress makes a fresh decompression context per call, as
    // fragfs does; one reused context shows what that costs.
    let dctx = RefCell::new(zstd::bulk::Decompressor::new()?);
    let cases = [
        case(
            "zstd",
            vec![Filter::Zstd { level: 3 }],
            Datatype::Float64,
            &walk_f64(&mut rng),
            |p| framed(p, zstd::bulk::compress(p, 3)?),
            vec![
                (
                    "zstd::bulk::decompress",
                    Box::new(|c: &Chunk| Ok(zstd::bulk::decompress(&c.data, c.plain.len())?)),
                ),
                (
                    "zstd::bulk::Decompressor(reused)",
                    Box::new(move |c: &Chunk| {
                        Ok(dctx.borrow_mut().decompress(&c.data, c.plain.len())?)
                    }),
                ),
            ],
        )?,
        case(
            "lz4",
            vec![Filter::Lz4 { level: 1 }],
            Datatype::Int64,
            &counter_i64(&mut rng),
            |p| framed(p, lz4_flex::block::compress(p)),
            vec![(
                "lz4_flex::block::decompress",
                Box::new(|c: &Chunk| Ok(lz4_flex::block::decompress(&c.data, c.plain.len())?)),
            )],
        )?,
        case(
            "none",
            vec![],
            Datatype::Int32,
            &random_i32(&mut rng),
            |p| {
                Ok(Chunk {
                    md: Vec::new(),
                    data: p.to_vec(),
                    plain: p.to_vec(),
                })
            },
            vec![("<[u8]>::to_vec", Box::new(|c: &Chunk| Ok(c.data.clone())))],
        )?,
    ];
    let note = if timing.rounds == 1 {
        "; smoke run, figures not meaningful"
    } else {
        ""
    };
    for case in &cases {
        let (fragfs, peers) = measure(case, timing)?;
        let stored: usize = case.chunks.iter().map(|c| c.md.len() + c.data.len()).sum();
        for ((peer_name, _), peer) in case.peers.iter().zip(peers) {
            println!(
                "decode {}: fragfs {fragfs:.0} MB/s, {peer_name} {peer:.0} MB/s, ratio {:.2} \
                 (64 KiB chunks, {:.2}x compression){note}",
                case.name,
                fragfs / peer,
                TILE as f64 / stored as f64,
            );
        }
    }
    Ok(())
}
