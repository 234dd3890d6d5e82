"""Fixtures of the data tests: the shared LIBSVM folder, isolation from the user's data folders,
and a local HTTP server laid out like the LIBSVM download folder."""

from __future__ import annotations

import os
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

SHARED_LIBSVM = Path(os.environ.get("SVMLAB_SHARED_DATA")
                     or Path(__file__).resolve().parents[2] / "shared" / "data" / "libsvm")


def closed_port() -> int:
    """A loopback port that was free a moment ago and that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def shared_libsvm() -> Path:
    """The shared folder of LIBSVM files (<dataset>/<file>, MANIFEST.tsv, NOTES.tsv)."""
    if not (SHARED_LIBSVM / "MANIFEST.tsv").is_file():
        pytest.skip(f"no shared LIBSVM folder at {SHARED_LIBSVM} (set SVMLAB_SHARED_DATA)")
    return SHARED_LIBSVM


@pytest.fixture
def refused_url() -> str:
    """A URL on a loopback port nothing listens on: connecting to it is refused."""
    return f"http://127.0.0.1:{closed_port()}"


@pytest.fixture
def isolated_data_env(monkeypatch, tmp_path, refused_url) -> None:
    """No user data folder, an empty default cache in tmp_path, no route to the real site."""
    monkeypatch.delenv("SVMLAB_DATA_DIR", raising=False)
    monkeypatch.setenv("SVMLAB_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.setenv("SVMLAB_LIBSVM_URL", refused_url)


class LibsvmSite:
    """What the server serves: ``files`` by flat name, ``cut_short`` names sent half-way only,
    ``stalled`` names sent half-way and then held until ``release`` is set (``sent`` is set once
    a half is out: the client is then reading its download); ``requests`` counts the GETs per
    name."""

    def __init__(self, files: dict[str, Path]):
        self.files = files
        self.cut_short: set[str] = set()
        self.stalled: set[str] = set()
        self.release = threading.Event()
        self.sent = threading.Event()
        self.requests: Counter = Counter()
        self.url = ""


@pytest.fixture
def libsvm_site(shared_libsvm):
    """A ThreadingHTTPServer on 127.0.0.1 serving the shared files as ``<url>/<file>``."""
    site = LibsvmSite({path.name: path for path in shared_libsvm.glob("*/*")})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            name = unquote(self.path.lstrip("/"))
            site.requests[name] += 1
            if name not in site.files:
                self.send_error(404)
                return
            body = site.files[name].read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if name in site.stalled:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                site.sent.set()
                site.release.wait()
                return
            self.wfile.write(body[: len(body) // 2] if name in site.cut_short else body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield site
    site.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


def pytest_configure(config):
    """Register the test-only toy solver (support/toy.py): the conformance suite then runs over
    it like over every solver of svmlab."""
    from svmlab.estimator import registry

    if "toy" not in registry.SOLVERS:
        registry.register(registry.SolverEntry("toy", "support.toy.ToySVM", "toy"))
