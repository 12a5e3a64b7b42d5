"""A small HTTP proxy in front of moto's S3 server that fails a chosen share of requests.

Faults are what S3 and networks really do: ``500 InternalError`` and ``503 SlowDown`` replies,
and connections reset before any reply. Requests are sorted into reads (GET/HEAD of an
object), lists (GET on a bucket) and writes (PUT/POST/DELETE); each class has its own fault
fraction. ``fail_first`` makes the first N requests whose path contains a substring fail, to
outlast the storage layer's own retry budget and reach Prefect's task retries.

``latency_s`` delays every request before it is forwarded: moto answers in well under a
millisecond, a real bucket's first byte takes tens of milliseconds, and only that delay shows
whether the stage keeps requests in flight or waits for them one after another. ``by_method``
counts requests by what they cost on S3: HEAD, GET (an object), LIST (GET on a bucket), PUT,
POST and DELETE.
"""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import urlsplit

_ERRORS = (
    (500, "InternalError", "We encountered an internal error. Please try again."),
    (503, "SlowDown", "Please reduce your request rate."),
)
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "proxy-connection"}


@dataclass
class FaultPlan:
    """Which requests fail and how; counts what was injected (thread-safe)."""

    fractions: dict[str, float] = field(default_factory=dict)
    resets: bool = False
    fail_first: dict[str, int] = field(default_factory=dict)
    fail_first_of_kind: dict[str, int] = field(default_factory=dict)  # e.g. {"list": 1}: rare kinds always see a fault
    seed: int = 0
    latency_s: float = 0.0
    requests: Counter = field(default_factory=Counter)
    injected: Counter = field(default_factory=Counter)
    by_method: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()

    def decide(self, method: str, path: str) -> str | None:
        """None to forward, else the fault to inject: 'reset' or an error code."""
        kind = request_kind(method, path)
        with self._lock:
            self.requests[kind] += 1
            self.by_method[method_kind(method, path)] += 1
            sticky = next((s for s, n in self.fail_first.items() if n > 0 and s in path), None)
            if sticky is not None:
                self.fail_first[sticky] -= 1
                fault = "InternalError"
            elif self.fail_first_of_kind.get(kind, 0) > 0:
                self.fail_first_of_kind[kind] -= 1
                fault = "InternalError"
            elif self._rng.random() < self.fractions.get(kind, 0.0):
                fault = "reset" if self.resets and self._rng.random() < 0.5 else _ERRORS[self._rng.randrange(len(_ERRORS))][1]
            else:
                return None
            self.injected[f"{kind} {fault}"] += 1
            return fault

    @property
    def total_injected(self) -> int:
        return sum(self.injected.values())


def request_kind(method: str, path: str) -> str:
    """'read', 'list' or 'write' (moto is addressed path-style: /bucket/key?query)."""
    if method in ("PUT", "POST", "DELETE"):
        return "write"
    route = urlsplit(path).path.strip("/")
    return "read" if "/" in route else "list"


def method_kind(method: str, path: str) -> str:
    """The HTTP method, except that a GET on a bucket is a 'LIST'."""
    return "LIST" if method == "GET" and request_kind(method, path) == "list" else method


class FaultProxy(ThreadingHTTPServer):
    """Forwards to ``upstream`` (http://host:port) unless the plan injects a fault."""

    daemon_threads = True

    def __init__(self, upstream: str, plan: FaultPlan) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        target = urlsplit(upstream)
        self.upstream = (target.hostname, target.port)
        self.plan = plan
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FaultProxy

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet: tests read counters
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        body = self._body()
        time.sleep(self.server.plan.latency_s)
        fault = self.server.plan.decide(self.command, self.path)
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if fault is not None:
            status, message = next((s, m) for s, c, m in _ERRORS if c == fault)
            self._reply(status, [("Content-Type", "application/xml")], _error_xml(fault, message))
            return
        upstream = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Host"] = f"{self.server.upstream[0]}:{self.server.upstream[1]}"
            headers["Content-Length"] = str(len(body))
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            self._reply(response.status, kept, data, declared=response.getheader("Content-Length"))
        finally:
            upstream.close()

    def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes, declared: str | None = None) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        length = declared if self.command == "HEAD" and declared is not None else str(len(data))
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle  # noqa: N815  # BaseHTTPRequestHandler's method names


def _error_xml(code: str, message: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
        f"<RequestId>injected</RequestId></Error>"
    ).encode()
