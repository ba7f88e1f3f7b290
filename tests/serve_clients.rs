//! Real HTTP clients reading `fragfs serve`: curl, Python (requests, fsspec), zarr-python
//! and xarray on `zarr/` (v2 and v3) against TileDB-Py, Dask on two workers, DuckDB,
//! GDAL's `/vsicurl/`, and headless Chromium rendering the folder listing. Every client
//! comes from the registries (scripts/test.sh installs them); one that is missing skips
//! its check saying so, and fails under CI=true.

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;

use common::http::get;
use common::*;
use fragfs::serve::{Doors, Server};
use fragfs::view::FileTree;
use serde_json::json;

fn serve(tree: Arc<dyn FileTree>) -> Server {
    let doors = Doors {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Doors::default()
    };
    Server::start(tree, &doors, 2).unwrap()
}

fn served_feature(name: &str) -> (Arc<dyn FileTree>, Server, SocketAddr) {
    let (array, expected) = feature(name);
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    let server = serve(tree.clone());
    let addr = server.http_addr().unwrap();
    (tree, server, addr)
}

fn bytes(tree: &dyn FileTree, path: &str) -> Vec<u8> {
    read_all(tree, tree.resolve(path).unwrap()).unwrap()
}

/// The headless browser on this machine, if any.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// A client missing here fails under CI (scripts/test.sh installs them) and skips
/// elsewhere, saying so.
fn missing(reason: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but {reason}"
    );
    skip(reason);
}

#[test]
fn curl_reads_files_ranges_and_headers() {
    if !tool_available("curl", "curl (scripts/test.sh installs it)") {
        return;
    }
    let (tree, _server, addr) = served_feature("merge_dense_overlap");
    let fragment = tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
        .name
        .clone();
    for path in [
        format!("fragments/{fragment}/i32/values.bin"),
        "latest/f64/values.bin".to_string(),
        "latest/cells.csv".to_string(),
        "latest/i32/values.hdr".to_string(),
        "array.json".to_string(),
    ] {
        let url = format!("http://{addr}/{path}");
        let out = Command::new("curl").args(["-sSf", &url]).output().unwrap();
        assert!(
            out.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = bytes(&*tree, &path);
        assert_eq!(out.stdout, want, "curl {path}");
        let out = Command::new("curl")
            .args(["-sSf", "-r", "2-9", &url])
            .output()
            .unwrap();
        assert_eq!(out.stdout, want[2..10], "curl -r 2-9 {path}");
    }
    let out = run_ok(
        Command::new("curl").args(["-sSfI", &format!("http://{addr}/latest/i32/values.bin")]),
    );
    assert!(
        out.contains("HTTP/1.1 200") && out.to_ascii_lowercase().contains("etag: \""),
        "{out}"
    );
}

#[test]
fn python_clients_xarray_dask_and_duckdb_read_it_over_http() {
    let Some(python) = python_with("fsspec") else {
        return missing("no Python with fsspec (scripts/test.sh installs it)");
    };
    let (array, _) = feature("merge_dense_overlap");
    let (tree, _server, addr) = served_feature("merge_dense_overlap");
    let fragment = tree.list(tree.resolve("fragments").unwrap()).unwrap()[0]
        .name
        .clone();
    let files = [
        format!("fragments/{fragment}/i32/values.bin"),
        "latest/f64/values.bin".to_string(),
        "latest/i32/values.npy".to_string(),
        "latest/cells.csv".to_string(),
        "at/1/read.json".to_string(),
        "array.json".to_string(),
    ];
    let expected = tempfile::tempdir().unwrap();
    for path in &files {
        let node = tree.resolve(path);
        let Ok(node) = node else { continue };
        let dest = expected.path().join(path);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, read_all(&*tree, node).unwrap()).unwrap();
    }
    let files: Vec<&String> = files
        .iter()
        .filter(|p| expected.path().join(p).exists())
        .collect();
    let mut listings = serde_json::Map::new();
    for folder in ["latest", "fragments", &format!("fragments/{fragment}")] {
        let node = tree.resolve(folder).unwrap();
        let names: Vec<String> = tree
            .list(node)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        listings.insert(folder.to_string(), json!(names));
    }
    let spec = json!({
        "url": format!("http://{addr}"),
        "expected": expected.path(),
        "files": files,
        "listings": listings,
        "array": array,
        "attr": "i32",
        "dims": ["r", "c"],
        "csv": "latest/cells.csv",
    });
    let spec_file = expected.path().join("spec.json");
    std::fs::write(&spec_file, serde_json::to_vec(&spec).unwrap()).unwrap();
    let out = Command::new(&python)
        .arg(repo().join("tests/check_serve_http.py"))
        .arg(&spec_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for client in ["requests", "fsspec", "xarray", "dask", "duckdb"] {
        assert!(
            stdout.contains(&format!("ok {client}")),
            "{client} not checked:\n{stdout}"
        );
    }
}

/// zarr-python 3 opens `zarr/` over HTTP as Zarr v2 and v3 and reads what TileDB reads,
/// at every state, for the Zarr fixtures and the dense feature fixtures (the same checks
/// as through the mount, tests/zarr.rs).
#[test]
fn zarr_python_reads_zarr_over_http_as_tiledb_reads_it() {
    let Some(python) = python_with("fsspec") else {
        return missing("no Python with fsspec (scripts/test.sh installs it)");
    };
    let mut cases = expected_files(&repo().join("tests/fixtures/zarr"));
    cases.extend(expected_files(&features()).into_iter().filter(|(a, _)| {
        a.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("merge_dense")
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut servers = Vec::new();
    let mut specs = Vec::new();
    for (array, expected) in &cases {
        let merged_path = std::path::PathBuf::from(format!("{}.merged.json", array.display()));
        assert!(merged_path.exists(), "{}", merged_path.display());
        let tree: Arc<dyn FileTree> = Arc::new(open_view(array, expected).unwrap());
        let server = serve(tree);
        specs.push(json!({
            "mount": format!("http://{}", server.http_addr().unwrap()),
            "array": array,
            "merged": merged_path,
            "key": expected["encryption"]["key"],
        }));
        servers.push(server);
    }
    let spec = dir.path().join("spec.json");
    std::fs::write(&spec, serde_json::to_vec(&specs).unwrap()).unwrap();
    let out = Command::new(&python)
        .arg(repo().join("tests/check_zarr.py"))
        .arg(&spec)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    println!("{stdout}");
    assert!(ok >= 4, "only {ok} arrays checked over HTTP:\n{stdout}");
}

/// GDAL's `/vsicurl/` opens a merged attribute's `values.bin` with the ENVI header beside
/// it, and `zarr/` with its Zarr driver, over HTTP: what it copies out is the values.
#[test]
fn gdal_reads_envi_rasters_and_zarr_over_vsicurl() {
    if !tool_available("gdalinfo", "GDAL (scripts/test.sh installs gdal-bin)") {
        return;
    }
    let (tree, _server, addr) = served_feature("merge_dense_overlap");
    let want = bytes(&*tree, "latest/i32/values.bin");
    let out = tempfile::tempdir().unwrap();
    for (dataset, what) in [
        (
            format!("/vsicurl/http://{addr}/latest/i32/values.bin"),
            "ENVI",
        ),
        (format!("ZARR:\"/vsicurl/http://{addr}/zarr/i32\""), "Zarr"),
    ] {
        let info = run_ok(Command::new("gdalinfo").arg(&dataset));
        assert!(info.contains("Size is 8, 6"), "{what}:\n{info}");
        let copy = out.path().join(format!("{what}.bin"));
        run_ok(
            Command::new("gdal_translate")
                .args(["-q", "-of", "ENVI"])
                .arg(&dataset)
                .arg(&copy),
        );
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            want,
            "GDAL's {what} copy over HTTP"
        );
    }
}

/// Headless Chromium renders the listing: the names and sizes show in its DOM, every
/// link it resolves answers, and its screenshot is a page, not a blank.
#[test]
fn chromium_renders_the_listing_with_working_links() {
    let Some(chromium) = chromium() else {
        return missing("no chromium (scripts/test.sh installs Debian's chromium)");
    };
    let (tree, _server, addr) = served_feature("merge_dense_overlap");
    let profile = tempfile::tempdir().unwrap();
    let browse = |args: &[&str], url: &str| {
        run_ok(
            Command::new(chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .args(args)
                .arg(url),
        )
    };
    let page = format!("http://{addr}/latest/");
    let dom = browse(&["--dump-dom"], &page);
    let latest = tree.resolve("latest").unwrap();
    let mut links = 0;
    for e in tree.list(latest).unwrap() {
        assert!(
            dom.contains(&format!(
                ">{}{}</a>",
                e.name,
                if e.is_dir() { "/" } else { "" }
            )),
            "{} not shown:\n{dom}",
            e.name
        );
        let stat = tree.stat(e.ino).unwrap();
        if !e.is_dir() && stat.exact_size {
            assert!(
                dom.contains(&format!(">{}</td>", stat.size)),
                "size of {} not shown",
                e.name
            );
        }
    }
    // Every link of the rendered page answers.
    for href in dom
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
    {
        let target = if href == "../" {
            "/".to_string()
        } else {
            format!("/latest/{href}")
        };
        let r = get(addr, "HEAD", &target, &[]);
        assert_eq!(r.status, 200, "link {href} -> {target}");
        links += 1;
    }
    assert!(links > 5, "{links} links");
    let shot = profile.path().join("listing.png");
    browse(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=800,600",
        ],
        &page,
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // A blank page compresses to almost nothing; text and a table do not.
    assert!(
        png.len() > 8_000,
        "a screenshot of {} bytes: blank?",
        png.len()
    );
}

/// Counts the pixels of a screenshot that are viridis colours (the table read from
/// `src/encode/colormap.rs`, within 3 of a step on each channel): the page's own
/// colours (text, links, grey rules) are none of them; the quick looks are nothing else,
/// and the fragment picture's time strip, strokes and legend are them.
const VIRIDIS_PIXELS: &str = r#"
import re, sys, pathlib
import numpy as np
from PIL import Image
src = pathlib.Path(sys.argv[1]).read_text().split("pub static VIRIDIS")[1].split("\n];")[0]
table = np.array([[int(x) for x in m] for m in re.findall(r"\[(\d+), (\d+), (\d+)\]", src)])
assert table.shape == (256, 3)
for shot in sys.argv[2:]:
    px = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(np.int64)
    colours, counts = np.unique(px, axis=0, return_counts=True)
    near = (np.abs(colours[:, None, :] - table[None, :, :]).max(axis=2) <= 3).any(axis=1)
    print(int(counts[near].sum()))
"#;

/// Headless Chromium renders the folder pages of the sample array, served by the
/// `fragfs serve` command (on a free port; the test waits for its listening line), with
/// their pictures loaded: the DOM of `latest/` holds the picture, a quick look per
/// numeric attribute, the fields table and the files; the screenshots (Pillow counts
/// their viridis pixels) of the root page and of `latest/` show the picture and the
/// quick looks, and the same pages with images off show none of those colours. The
/// virtual-time budget lets every image load however busy the machine is; nothing is
/// timed.
#[test]
fn chromium_renders_a_folder_page_with_its_pictures() {
    let Some(chromium) = chromium() else {
        return missing("no chromium (scripts/test.sh installs Debian's chromium)");
    };
    let Some(python) = python_with("PIL") else {
        return missing("no Python with Pillow (scripts/test.sh installs it)");
    };
    let (array, _) = fixture("sample");
    let (_server, addr) = fragfs_serve(&array, &["--http", "127.0.0.1:0"]);
    let profile = tempfile::tempdir().unwrap();
    let browse = |args: &[&str], url: &str| {
        run_ok(
            Command::new(chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--hide-scrollbars",
                    "--virtual-time-budget=60000",
                    "--window-size=1200,2400",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .args(args)
                .arg(url),
        )
    };
    let latest = format!("http://{addr}/latest/");
    let dom = browse(&["--dump-dom"], &latest);
    assert!(
        dom.contains("<img class=\"picture\" src=\"fragments.svg\""),
        "{dom}"
    );
    for field in ["temperature", "station"] {
        assert!(
            dom.contains(&format!("src=\"{field}/values.png\"")),
            "no quick look of {field}"
        );
    }
    assert!(
        !dom.contains("src=\"name/values.png\""),
        "a string has no quick look"
    );
    assert!(dom.contains("<h2 id=\"fields\">Fields</h2>") && dom.contains(">read.json</a>"));
    assert!(
        !dom.contains(&*array.to_string_lossy()),
        "the server's path shows"
    );
    let mut shots = Vec::new();
    for (page, name) in [(format!("http://{addr}/"), "root"), (latest, "latest")] {
        for images in [true, false] {
            let shot = profile.path().join(format!("{name}-{images}.png"));
            let mut args = vec![format!("--screenshot={}", shot.display())];
            if !images {
                args.push("--blink-settings=imagesEnabled=false".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            browse(&args, &page);
            shots.push(shot);
        }
    }
    let counts = run_ok(
        Command::new(&python)
            .args(["-c", VIRIDIS_PIXELS])
            .arg(repo().join("src/encode/colormap.rs"))
            .args(&shots),
    );
    let n: Vec<u64> = counts.lines().map(|l| l.trim().parse().unwrap()).collect();
    eprintln!(
        "viridis pixels: root {} (no images {}), latest {} (no images {})",
        n[0], n[1], n[2], n[3]
    );
    assert!(n[0] > 500, "the root page's picture did not show: {n:?}");
    // Two quick looks of 8 x 12 cells, at least 192 pixels wide each, on top.
    assert!(
        n[2] > n[0] + 2 * 192 * 128 * 9 / 10,
        "the quick looks did not show: {n:?}"
    );
    assert!(n[1] < 50 && n[3] < 50, "viridis without images: {n:?}");
}

/// Headless Chromium as the victim of a web page: a page of another origin reads the
/// server's answers only when `--cors-origin` names that origin, and a page that
/// rebinds its own name to 127.0.0.1 (Chromium told `evil.example` is 127.0.0.1) is
/// refused by the server.
#[test]
fn chromium_pages_read_only_with_cors_and_a_rebound_name_is_refused() {
    let Some(chromium) = chromium() else {
        return missing("no chromium (scripts/test.sh installs Debian's chromium)");
    };
    let (array, expected) = feature("merge_dense_overlap");
    let tree: Arc<dyn FileTree> = Arc::new(open_view(&array, &expected).unwrap());
    // The page's own server: Python's, on another port (another origin).
    let site = tempfile::tempdir().unwrap();
    let page_server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let page_port = page_server.local_addr().unwrap().port();
    drop(page_server);
    let _pages = KillOnDrop(
        Command::new("python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1"])
            .arg(page_port.to_string())
            .current_dir(site.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let origin = format!("http://127.0.0.1:{page_port}");
    let want = String::from_utf8(bytes(&*tree, "zarr/.zgroup")).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let browse = |url: &str, extra: &[&str]| {
        run_ok(
            Command::new(chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--virtual-time-budget=20000",
                    "--dump-dom",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .args(extra)
                .arg(url),
        )
    };
    // The page's server answers once it listens.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", page_port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the page server");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for cors in [false, true] {
        let doors = Doors {
            http: Some("127.0.0.1:0".parse().unwrap()),
            cors_origins: if cors { vec![origin.clone()] } else { vec![] },
            ..Doors::default()
        };
        let server = Server::start(tree.clone(), &doors, 2).unwrap();
        let addr = server.http_addr().unwrap();
        let page = format!(
            "<!DOCTYPE html><html><body><pre id=\"out\">waiting</pre><script>\n\
             fetch('http://{addr}/zarr/.zgroup', {{headers: {{'Range': 'bytes=0-'}}}})\n\
             .then(r => r.text())\n\
             .then(t => document.getElementById('out').textContent = 'read:' + t)\n\
             .catch(e => document.getElementById('out').textContent = 'refused:' + e);\n\
             </script></body></html>\n"
        );
        let name = format!("page{}.html", u8::from(cors));
        std::fs::write(site.path().join(&name), page).unwrap();
        let dom = browse(&format!("{origin}/{name}"), &[]);
        if cors {
            let read = format!("<pre id=\"out\">read:{}", want.trim());
            assert!(dom.contains(&read), "{dom}");
        } else {
            assert!(dom.contains("<pre id=\"out\">refused:"), "{dom}");
        }
        // A page whose name resolves to 127.0.0.1 (DNS rebinding): refused.
        let rebound = format!("http://evil.example:{}/", addr.port());
        let dom = browse(
            &rebound,
            &["--host-resolver-rules=MAP evil.example 127.0.0.1"],
        );
        assert!(dom.contains("not a name of this server"), "{dom}");
        assert!(!dom.contains("array.json"), "{dom}");
    }
}
