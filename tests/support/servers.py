"""A throwaway PostgreSQL cluster and a real `svmlab server` (mlflow server) on loopback."""

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from conftest import closed_port as free_port
from support.runs import child_env, train_args


def postgres_bin() -> Path | None:
    """The folder of initdb/pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its programs as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres_cluster(password: str | None = None):
    """initdb into a fresh folder, start it on a free loopback port, yield a database URI (user
    mlflow, no password in it). With ``password`` the cluster asks user mlflow for it
    (scram-sha-256), else it trusts every connection."""
    bin_dir = postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="svmlab-pg-"))  # not under root's private tmp folders
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", free_port()
    auth = ["--auth=trust"]
    if password:
        (folder / "pw").write_text(password + "\n")
        auth = ["--auth=scram-sha-256", f"--pwfile={folder / 'pw'}"]

    def run(program: str, *args: str) -> None:
        subprocess.run(
            _as_postgres([str(bin_dir / program), *args]),
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ | ({"PGPASSWORD": password} if password else {}),
        )

    try:
        run("initdb", "-D", str(data), "-U", "mlflow", *auth, "-E", "UTF8", "--no-sync")
        run(
            "pg_ctl",
            "-D",
            str(data),
            "-l",
            str(folder / "server.log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )
        try:
            run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "mlflow", "mlflow")
            yield f"postgresql://mlflow@127.0.0.1:{port}/mlflow"
        finally:
            run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def tracking_server(
    backend_store_uri: str,
    artifacts: Path,
    port: int | None = None,
    auth_env: dict[str, str] | None = None,
):
    """`svmlab server` on ``port`` (default: a free loopback port) until the block ends; yields
    its URL. With ``auth_env`` (its admin's variables) it is ``svmlab server --auth``, whose
    auth database is basic_auth.db beside ``artifacts``."""
    port = port or free_port()
    log = open(artifacts.parent / f"server-{port}.log", "w")
    env = child_env(**auth_env or {})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            "server",
            "--backend-store-uri",
            backend_store_uri,
            "--artifacts-destination",
            str(artifacts),
            "--port",
            str(port),
            "--workers",
            "2",
            *(["--auth"] if auth_env is not None else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        cwd=artifacts.parent,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError(
                    "the tracking server did not start:\n"
                    + (artifacts.parent / f"server-{port}.log").read_text()
                )
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def train_command(url: str, folder: Path, *overrides: str) -> list[str]:
    """`svmlab train ...` with its outputs under ``folder`` and tracking.uri the server's."""
    folder.mkdir(exist_ok=True)
    args = [
        a for a in train_args(folder / "unused.db", *overrides) if not a.startswith("tracking.uri=")
    ]
    return [sys.executable, "-m", "svmlab.app.cli", *args, f"tracking.uri={url}"]
