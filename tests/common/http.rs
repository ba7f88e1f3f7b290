//! A minimal HTTP/1.1 client over `TcpStream` for the serve tests: it sends exactly
//! the bytes a test writes (so malformed requests can be sent too) and parses a
//! response with `Content-Length`, chunked transfer or none (read to close).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// Sends `GET path` (or another method) with extra header lines, and reads the reply.
pub fn get(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    raw(addr, head.as_bytes(), method == "HEAD")
}

/// The body of `GET path`, which must answer 200.
pub fn body(addr: SocketAddr, path: &str) -> Result<Vec<u8>, String> {
    let r = get(addr, "GET", path, &[]);
    if r.status != 200 {
        return Err(format!(
            "GET {path}: {} {}",
            r.status,
            String::from_utf8_lossy(&r.body).trim()
        ));
    }
    Ok(r.body)
}

/// Writes `request` as it is and reads one reply.
pub fn raw(addr: SocketAddr, request: &[u8], head_only: bool) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(request).unwrap();
    read_reply(&mut BufReader::new(s), head_only)
}

pub fn read_reply(r: &mut impl BufRead, head_only: bool) -> Reply {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let mut body = Vec::new();
    let no_body = head_only || status == 304 || status == 204;
    if no_body {
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"))
    {
        loop {
            line.clear();
            r.read_line(&mut line).unwrap();
            let n = usize::from_str_radix(line.trim().split(';').next().unwrap(), 16)
                .unwrap_or_else(|_| panic!("bad chunk size {line:?}"));
            if n == 0 {
                line.clear();
                r.read_line(&mut line).unwrap();
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).unwrap();
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = headers.get("content-length") {
        let n: usize = n.parse().unwrap();
        body.resize(n, 0);
        r.read_exact(&mut body).unwrap();
    } else {
        r.read_to_end(&mut body).unwrap();
    }
    Reply {
        status,
        headers,
        body,
    }
}

/// A tree served over HTTP, read as the corpus checks read any tree.
pub struct OverHttp(pub SocketAddr);

impl super::Tree for OverHttp {
    fn fragments(&self) -> Result<Vec<String>, String> {
        let listing = body(self.0, "/fragments/?format=json")?;
        let v: serde_json::Value = serde_json::from_slice(&listing).map_err(|e| e.to_string())?;
        let mut names: Vec<String> = v["entries"]
            .as_array()
            .ok_or("no entries")?
            .iter()
            .filter_map(|e| e["name"].as_str().map(String::from))
            .collect();
        names.sort();
        Ok(names)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let encoded: Vec<String> = path.split('/').map(fragfs::wire::path::encode).collect();
        body(self.0, &format!("/{}", encoded.join("/")))
    }
}

/// A TCP connection to `addr` from the local address `from` (another loopback address,
/// `127.0.0.2`: another client, as the server counts them).
pub fn connect_from(from: std::net::Ipv4Addr, addr: SocketAddr) -> TcpStream {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = addr else {
        panic!("{addr}: an IPv4 address");
    };
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns; the addresses are
    // valid sockaddr_in values that outlive the calls, with their exact length.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let local = sockaddr(from, 0);
        let rc = libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "bind {from}: {}", std::io::Error::last_os_error());
        let remote = sockaddr(*to.ip(), to.port());
        let rc = libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "connect {addr}: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

/// `get` from another client address.
pub fn get_from(
    from: std::net::Ipv4Addr,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Reply {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut s = connect_from(from, addr);
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    read_reply(&mut BufReader::new(s), method == "HEAD")
}
