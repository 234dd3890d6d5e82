"""Shared fixtures: new MLflow stores, the shared LIBSVM folder, isolation from the user's data
folders, and a local HTTP server laid out like the LIBSVM download folder."""

from __future__ import annotations

import os
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

SHARED_LIBSVM = Path(
    os.environ.get("SVMLAB_SHARED_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "libsvm"
)


def closed_port() -> int:
    """A loopback port that was free a moment ago and that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def store_template(tmp_path_factory) -> Path:
    """What a new MLflow SQLite store holds, made once (`support.runs.store_template`)."""
    from support.runs import store_template

    return store_template(tmp_path_factory.mktemp("template") / "mlflow.db")


@pytest.fixture
def new_store(store_template):
    """``new_store(path)``: a new MLflow SQLite store at ``path``, its schema in place."""
    from support.runs import copy_store

    return lambda path: copy_store(store_template, path)


@pytest.fixture
def store(new_store, tmp_path) -> Path:
    """``tmp_path/mlflow.db``: a new MLflow SQLite store, its schema in place."""
    return new_store(tmp_path / "mlflow.db")


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


NUMBA_CACHE = pytest.StashKey[object]()
NUMBA_READY = "SVMLAB_TEST_NUMBA_READY"  # the ready file's path, inherited by xdist's workers


def pytest_sessionstart(session):
    """A run of the whole suite (no paths, no -k) starts filling numba's cache in parallel
    processes (`support.numba_cache`) while the tests are collected; under pytest-xdist the
    controller does it once for all workers."""
    config = session.config
    whole_suite = (
        config.args_source is pytest.Config.ArgsSource.TESTPATHS and not config.option.keyword
    )
    if whole_suite and not hasattr(config, "workerinput"):
        import tempfile

        from support import numba_cache

        ready = Path(tempfile.mkdtemp(prefix="svmlab-numba-")) / "ready"
        os.environ[NUMBA_READY] = str(ready)
        config.stash[NUMBA_CACHE] = numba_cache.Filling(ready)


@pytest.fixture(scope="session", autouse=True)
def numba_cache_filled():
    """The first test of each test process waits until numba's cache is filled; a solver that
    failed there is left to its own tests to show."""
    if ready := os.environ.get(NUMBA_READY):
        from support import numba_cache

        numba_cache.wait(Path(ready))


def pytest_sessionfinish(session):
    filling = session.config.stash.get(NUMBA_CACHE, None)
    if filling is not None and filling.seconds is None:  # no test waited for it
        filling.stop()


def pytest_terminal_summary(terminalreporter, config):
    filling = config.stash.get(NUMBA_CACHE, None)
    if filling is not None and filling.seconds is not None:
        terminalreporter.write_line(
            f"numba cache filled in {filling.seconds:.0f} s; failed: "
            f"{'; '.join(filling.errors) or 'none'}"
        )


def pytest_collection_modifyitems(config, items):
    """Each pytest-xdist worker starts with its share of the slow tests, then the rest.

    pytest-xdist's worksteal scheduler gives worker i the i-th of n consecutive, equal slices of
    the collection and lets an idle worker take the tail of a busy one's queue. Slow tests all
    at the front would land in the first slice, one after another on one worker; here each
    module's slow tests (which may share a module's server) go to the slice with the fewest so
    far, each slice opens with its own, and the short tests fill every slice's tail, which is
    what a worker that ran out takes over."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    modules: dict[str, list] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    shares: list[list] = [[] for _ in range(workers)]
    for module in sorted(modules.values(), key=len, reverse=True):
        min(shares, key=len).extend(module)
    rest = [item for item in items if not item.get_closest_marker("slow")]
    ordered = []
    for i, share in enumerate(shares):
        size = (len(items) - len(ordered)) // (workers - i)  # the scheduler's split
        taken = max(0, size - len(share))
        ordered += share + rest[:taken]
        rest = rest[taken:]
    items[:] = ordered + rest


def pytest_configure(config):
    """Import the test-only toy solver (support/toy.py): declared on its class, it is then a
    registered solver, and the conformance suite runs over it like over every solver of svmlab."""
    import support.toy  # noqa: F401
