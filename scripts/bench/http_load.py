"""HTTP clients of the `serve` bench section, on raw keep-alive sockets (asyncio), so
the client costs little next to the server it measures. Prints one JSON object.

    python http_load.py latency HOST:PORT < reads.json
        reads: [[path, offset, length], ...], one keep-alive connection, in order:
        {"latencies": [s, ...], "crc32": CRC of every byte read}
    python http_load.py get URL BUCKET < keys.json      (requests, one session)
    python http_load.py s3get ENDPOINT BUCKET < keys.json  (boto3, unsigned)
        each key GET whole in order: {"seconds", "bytes"}
    python http_load.py load HOST:PORT CLIENTS SECONDS SIZE < files.json
        files: [[path, size], ...]; CLIENTS connections each GET random SIZE-byte
        ranges for SECONDS: {"requests", "errors", "bytes", "p50", "p99", "seconds"}
"""

import asyncio
import json
import random
import sys
import time
import zlib


async def fetch(reader, writer, host, path, offset, length):
    """One ranged GET on an open connection: (status, body)."""
    writer.write((f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
                  f"Range: bytes={offset}-{offset + length - 1}\r\n\r\n").encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    size = 0
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            size = int(v)
    body = await reader.readexactly(size)
    return status, body


async def latency(addr, reads):
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    lat, crc = [], 0
    for path, offset, length in reads:
        t0 = time.perf_counter()
        status, body = await fetch(reader, writer, addr, path, offset, length)
        lat.append(time.perf_counter() - t0)
        if status != 206 or len(body) != length:
            raise SystemExit(f"{path} at {offset}: {status}, {len(body)} bytes")
        crc = zlib.crc32(body, crc)
    writer.close()
    return {"latencies": lat, "crc32": crc}


async def load(addr, clients, seconds, size, files):
    host, port = addr.rsplit(":", 1)
    end = time.monotonic() + seconds
    stats = {"requests": 0, "errors": 0, "bytes": 0}
    lat = []

    async def client(k):
        rng = random.Random(k)
        conn = None
        while time.monotonic() < end:
            try:
                if conn is None:
                    conn = await asyncio.open_connection(host, int(port))
                path, fsize = files[rng.randrange(len(files))]
                offset = rng.randrange(max(1, fsize - size))
                t0 = time.perf_counter()
                status, body = await fetch(*conn, addr, path, offset, size)
                lat.append(time.perf_counter() - t0)
                if status != 206 or len(body) != size:
                    stats["errors"] += 1
                else:
                    stats["requests"] += 1
                    stats["bytes"] += len(body)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                stats["errors"] += 1
                conn = None
        if conn is not None:
            conn[1].close()

    t0 = time.monotonic()
    await asyncio.gather(*(client(k) for k in range(clients)))
    lat.sort()
    pick = lambda p: lat[min(len(lat) - 1, int(p * (len(lat) - 1)))] if lat else 0.0
    return {**stats, "seconds": time.monotonic() - t0, "p50": pick(0.5), "p99": pick(0.99)}


def sequential(mode, url, bucket, keys):
    """Every key read whole, one after the other, by requests (HTTP) or boto3 (S3)."""
    if mode == "s3get":
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config

        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                          config=Config(signature_version=UNSIGNED))
        t0 = time.perf_counter()
        n = sum(len(s3.get_object(Bucket=bucket, Key=k)["Body"].read()) for k in keys)
    else:
        import requests

        session = requests.Session()
        t0 = time.perf_counter()
        n = sum(len(session.get(f"{url}/{k}").content) for k in keys)
    return {"seconds": time.perf_counter() - t0, "bytes": n}


def main():
    mode, addr = sys.argv[1], sys.argv[2]
    if mode in ("get", "s3get"):
        out = sequential(mode, addr, sys.argv[3], json.load(sys.stdin))
    elif mode == "latency":
        out = asyncio.run(latency(addr, json.load(sys.stdin)))
    else:
        clients, seconds, size = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
        out = asyncio.run(load(addr, clients, seconds, size, json.load(sys.stdin)))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
