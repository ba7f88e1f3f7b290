//! Builds the seed corpus of every fuzz target from real TileDB arrays:
//!
//!     cargo run --example seed_corpus -- OUT_DIR ARRAY_OR_FOLDER...
//!
//! Every array found under the given folders is cut into inputs in the layouts of
//! `src/lib.rs`: its files of generic tiles (`generic_tile`), its decoded schemas
//! (`schema`), its footers and metadata payloads with their schema (`fragment_metadata`),
//! and the first tiles of every field file, whole with their pipeline
//! (`chunk_pipeline`) and chunk by chunk for the filter reversed first (`filters`).
//! The network targets get request paths of the arrays' trees (`request_path`), sizes
//! of their files under real clients' `Range` headers (`range_header`), and what
//! WebDAV and NFS clients send (`propfind_body`, `basic_auth`, `rpc_record`).
//! Seeds are named by a hash of their bytes, so running it twice adds nothing.

use std::path::PathBuf;

use fragfs_fuzz::seeds::{find_arrays, fnv1a, seed_array, seed_filo, seed_wire, Seeds};

/// Seeds kept per target (the shared corpus gives thousands of near-duplicates; the first
/// by hash are a uniform sample), so a short run gets past its seeds quickly.
const MAX_SEEDS: usize = 2000;

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let Some((out, roots)) = args.split_first() else {
        eprintln!("usage: seed_corpus OUT_DIR ARRAY_OR_FOLDER...");
        std::process::exit(2);
    };
    let mut seeds = Seeds::default();
    let mut arrays = Vec::new();
    for root in roots {
        find_arrays(root, &mut arrays);
    }
    for array in &arrays {
        if let Err(e) = seed_array(array, &mut seeds) {
            eprintln!("seed_corpus: skipping {}: {e}", array.display());
        }
    }
    for root in roots {
        seed_filo(root, &mut seeds);
    }
    seed_wire(&arrays, &mut seeds);
    for (target, inputs) in &seeds.0 {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).expect("create the corpus folder");
        for input in inputs.values().take(MAX_SEEDS) {
            let path = dir.join(format!("{:016x}", fnv1a(input)));
            std::fs::write(&path, input).expect("write a seed");
        }
        println!("{target}: {} seeds", inputs.len().min(MAX_SEEDS));
    }
    println!("from {} arrays", arrays.len());
}
