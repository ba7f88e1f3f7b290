"""A TCP relay on 127.0.0.1 in front of the bench's S3 server that counts the requests
going through it, for the bench rows that are about how many GETs a read makes (the disk
cache's remount: none).

It relays bytes unchanged both ways (so SigV4 signatures, keep-alive and ranged answers
are untouched) and reads the request lines out of what the client sends. fragfs's reads
are GETs and HEADs without bodies, so every request in that stream starts with its
request line; a body would only add lines that are not request lines, never hide one.
"""

import contextlib
import re
import socket
import threading

REQUEST_LINE = re.compile(rb"(?:^|\r\n)(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/1\.[01]\r\n")


class Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []

    def add(self, method: str, target: str) -> None:
        with self.lock:
            self.requests.append((method, target))

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()

    def object_gets(self) -> int:
        """GETs of objects; listings (`?list-type=2`, `GET /bucket?...`) aside."""
        with self.lock:
            return sum(1 for m, t in self.requests if m == "GET" and "list-type" not in t)


def _pipe(src: socket.socket, dst: socket.socket, counter: Counter | None) -> None:
    tail = b""  # the end of the previous chunk, so a request line cut in two is still seen
    try:
        while chunk := src.recv(1 << 16):
            if counter is not None:
                data = tail + chunk
                for m in REQUEST_LINE.finditer(data):
                    # A line that lies wholly in `tail` was counted with the chunk before.
                    if m.end() > len(tail):
                        counter.add(m.group(1).decode(), m.group(2).decode("latin-1"))
                tail = data[-512:]
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def counting_proxy(upstream_port: int):
    """Yields (endpoint URL, Counter)."""
    counter = Counter()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", upstream_port))
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_pipe, args=(client, server, counter), daemon=True).start()
            threading.Thread(target=_pipe, args=(server, client, None), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", counter
    finally:
        stop.set()
        listener.close()
