"""Runs never lie about their state: real `svmlab train` processes, a real SQLite store and a
real `svmlab server`, interrupted, killed and cut off from their store.

Every test asserts what a user must be able to rely on: a non-zero exit status where anything
failed, one line saying what, no run left RUNNING after `svmlab runs reap` or the next start,
and no duplicate run on resume. Nothing here depends on timing: processes are waited for by
polling their state, with generous limits.
"""

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from mlflow import MlflowClient

from conftest import closed_port
from support.runs import child_env, parent_and_children, runs, train, train_args, train_process
from support.servers import tracking_server
from support.waiting import LIMIT_S, wait_for
from svmlab.errors import DownloadError
from svmlab.lifecycle import (
    HEARTBEAT_TAG,
    HOST_TAG,
    PID_STARTED_TAG,
    PID_TAG,
    iso_time,
    tag_time,
    this_process,
)
from svmlab.tracking.liveness import RunHeartbeat as Heartbeat
from svmlab.tracking.liveness import reap
from svmlab.tracking.patience import Patience, gone_line
from svmlab.tracking.store import HTTP_LIMITS, store_error_line, store_problem


def start(store, tmp_path, *overrides: str) -> subprocess.Popen:
    """`svmlab train` in a session of its own (signals to its group reach it alone), its
    output in ``tmp_path/out.txt``."""
    out = open(tmp_path / "out.txt", "w")
    return train_process(
        store, *overrides, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def output(tmp_path) -> str:
    return (tmp_path / "out.txt").read_text()


def statuses(store) -> list[str]:
    return [r.info.status for r in runs(store)]


def running(store) -> list:
    return [r for r in runs(store) if r.info.status == "RUNNING"]


def run_pids(store) -> set[int]:
    return {int(r.data.tags[PID_TAG]) for r in runs(store) if PID_TAG in r.data.tags}


def gone(pids) -> bool:
    return not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids
    )


def svmlab(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """The `svmlab` command in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "svmlab.app.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        check=False,
        env=child_env(),
    )


def train_args_for(store, *overrides: str) -> list[str]:
    """`svmlab train` arguments as ``train_args`` gives them; a ``tracking.uri`` among the
    overrides replaces the store's."""
    args = train_args(store, *overrides)
    if any(o.startswith("tracking.uri=") for o in overrides):
        args.remove(f"tracking.uri=sqlite:///{store}")
    return args


def killed_with_reason(run) -> bool:
    return run.info.status == "KILLED" and bool(run.data.tags.get("svmlab.error"))


# -- a run is never left RUNNING for good --------------------------------------------------------


def sigkilled_run(store, tmp_path):
    """A single run SIGKILLed while it trains: it is left RUNNING."""
    started = tmp_path / "started"
    proc = start(store, tmp_path, "solver=slow", f"+solver.started_file={started}")
    wait_for(started.exists, "the fit to start")
    proc.kill()
    proc.wait(timeout=LIMIT_S)
    (run,) = runs(store)
    assert run.info.status == "RUNNING"
    return run


def test_a_run_records_host_pid_start_and_heartbeat(store, tmp_path):
    run = sigkilled_run(store, tmp_path)
    tags = run.data.tags
    assert tags[HOST_TAG] == socket.gethostname()
    assert int(tags[PID_TAG]) > 0 and tag_time(tags[PID_STARTED_TAG]) > 0
    assert abs(tag_time(tags[HEARTBEAT_TAG]) - time.time()) < 3600
    assert tags[HEARTBEAT_TAG].endswith("Z") and "T" in tags[PID_STARTED_TAG]  # ISO 8601, UTC


def test_reap_marks_a_sigkilled_run_killed(store, tmp_path):
    run = sigkilled_run(store, tmp_path)
    done = svmlab("runs", "reap", "--tracking-uri", f"sqlite:///{store}")
    assert done.returncode == 0, done.stderr
    assert f"run {run.info.run_id} KILLED: its process" in done.stdout
    (after,) = runs(store)
    assert killed_with_reason(after) and "is gone" in after.data.tags["svmlab.error"]


def test_the_next_run_reaps_a_sigkilled_run(store, tmp_path, capsys):
    run = sigkilled_run(store, tmp_path)
    assert train(store, "solver=liblinear", "tracking.log_model=false") == 0
    assert f"run {run.info.run_id} was left RUNNING; marked KILLED" in capsys.readouterr().err
    assert sorted(statuses(store)) == ["FINISHED", "KILLED"]


def fake_run(client, experiment_id, **tags) -> str:
    return client.create_run(experiment_id, tags=tags).info.run_id


@pytest.mark.parametrize("when", [iso_time, lambda s: f"{s:.0f}"], ids=["iso", "epoch"])
def test_reap_tells_a_reused_pid_and_a_silent_run_from_a_live_one(store, when):
    """Time tags in ISO 8601 and, as earlier runs wrote them, in epoch seconds."""
    uri = f"sqlite:///{store}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("reap")
    me = this_process()
    now = time.time()
    live = fake_run(client, experiment, **me, **{HEARTBEAT_TAG: when(now)})
    reused = fake_run(
        client, experiment, **me | {PID_STARTED_TAG: when(1000.0)}, **{HEARTBEAT_TAG: when(now)}
    )
    elsewhere = {HOST_TAG: "another-host", PID_TAG: "1", PID_STARTED_TAG: when(1.0)}
    silent = fake_run(client, experiment, **elsewhere, **{HEARTBEAT_TAG: when(now - 700)})
    beating = fake_run(client, experiment, **elsewhere, **{HEARTBEAT_TAG: when(now - 60)})
    reaped = dict(reap(uri, [experiment], stale_after_s=600))
    assert set(reaped) == {reused, silent}
    assert "is gone" in reaped[reused] and "no sign of life for 70" in reaped[silent]
    assert {client.get_run(r).info.status for r in (live, beating)} == {"RUNNING"}
    assert {client.get_run(r).info.status for r in (reused, silent)} == {"KILLED"}


def test_the_heartbeat_is_refreshed_off_the_main_thread(store):
    uri = f"sqlite:///{store}"
    client = MlflowClient(uri)
    run_id = fake_run(client, client.create_experiment("beat"), **{HEARTBEAT_TAG: "0"})
    heartbeat = Heartbeat(uri, run_id, interval_s=0.1).start()
    try:
        wait_for(lambda: client.get_run(run_id).data.tags[HEARTBEAT_TAG] != "0", "a beat")
    finally:
        heartbeat.stop()
    assert abs(tag_time(client.get_run(run_id).data.tags[HEARTBEAT_TAG]) - time.time()) < 3600


@pytest.mark.slow
def test_a_sigkilled_launcher_leaves_no_orphan_and_resume_duplicates_nothing(
    store, tmp_path, capsys
):
    """joblib, 2 workers, 3 jobs: the launcher is SIGKILLed while two jobs train. The workers
    stop (their runs end KILLED, and the parent run with them, without a reap or a warning of
    joblib's), the queued job never starts, and the resumed sweep runs each config exactly
    once."""
    stop = tmp_path / "stop"
    sweep = ("solver=slow", "seed=0,1,2", f"+solver.stop_file={stop}", "tracking.log_model=false")
    proc = start(store, tmp_path, "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *sweep)
    wait_for(lambda: len(running(store)) == 3, "the parent and two jobs to run")
    workers = run_pids(store) - {proc.pid}
    proc.kill()
    proc.wait(timeout=LIMIT_S)
    wait_for(lambda: gone(workers), "the orphan workers to stop")
    parent, children = parent_and_children(store)
    assert killed_with_reason(parent) and "launching process" in parent.data.tags["svmlab.error"]
    assert len(children) == 2 and all(killed_with_reason(r) for r in children)
    assert "leaked" not in output(tmp_path) and "Warning" not in output(tmp_path)

    stop.touch()  # the resumed jobs finish at once
    assert train(store, "-m", *sweep, "+resume=true") == 0
    assert train(store, "-m", *sweep, "+resume=true") == 0
    assert "was left RUNNING" not in capsys.readouterr().err  # nothing was left to reap
    jobs = [r for r in runs(store) if r.data.tags.get("svmlab.role") != "sweep"]
    finished = sorted(r.data.tags["seed"] for r in jobs if r.info.status == "FINISHED")
    assert finished == ["0", "1", "2"]  # once each
    assert not running(store)
    parents = [r for r in runs(store) if r.data.tags.get("svmlab.role") == "sweep"]
    assert (
        len(parents) == 2
    )  # the killed sweep's; the first resume's (the second had nothing to do)
    assert parents[-1].data.metrics["jobs_finished"] == 3


@pytest.mark.slow
def test_a_new_store_created_by_another_client_at_the_same_moment_loses_no_run(tmp_path):
    """`svmlab train` and an MLflow client open one new SQLite store the moment it appears,
    five times: both run MLflow's migrations, and the run is recorded FINISHED each time."""
    for attempt in range(5):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        db = folder / "mlflow.db"
        proc = train_process(
            db,
            "solver=liblinear",
            "tracking.log_model=false",
            stdout=open(folder / "out.txt", "w"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + LIMIT_S
        while not db.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.002)
        # the other client: MLflow's own migration may lose the race, which is not svmlab's
        with contextlib.suppress(Exception):
            MlflowClient(f"sqlite:///{db}").search_experiments()
        assert proc.wait(timeout=600) == 0, (folder / "out.txt").read_text()
        assert statuses(db) == ["FINISHED"]


# -- interruptions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_fit_stuck_in_compiled_code_is_interrupted(store, tmp_path, sig):
    started = tmp_path / "started"
    proc = start(store, tmp_path, "solver=stuck", f"+solver.started_file={started}")
    wait_for(started.exists, "the fit to start")
    os.killpg(proc.pid, sig)
    assert proc.wait(timeout=LIMIT_S) == 130
    (run,) = runs(store)
    assert killed_with_reason(run)
    assert "svmlab: interrupted" in output(tmp_path) and "Traceback" not in output(tmp_path)


@pytest.mark.parametrize(
    "how",
    [
        "ctrl-c to the group",
        pytest.param("sigterm to the launcher", marks=pytest.mark.slow),
        pytest.param("a worker crashes", marks=pytest.mark.slow),
    ],
)
def test_an_interrupted_joblib_sweep_ends_every_job_killed(store, tmp_path, how):
    proc = start(
        store,
        tmp_path,
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "solver=stuck",
        "seed=0,1,2",
        "tracking.log_model=false",
    )
    wait_for(lambda: len(running(store)) == 3, "the parent and two jobs to run")
    pids = run_pids(store)
    if how == "ctrl-c to the group":
        os.killpg(proc.pid, signal.SIGINT)
    elif how == "sigterm to the launcher":
        proc.terminate()
    else:
        os.kill(max(pids - {proc.pid}), signal.SIGKILL)
    assert proc.wait(timeout=LIMIT_S) != 0
    wait_for(lambda: gone(pids), "every worker to stop")
    parent, children = parent_and_children(store)
    assert parent.info.status == "KILLED"
    assert len(children) == 2 and all(killed_with_reason(r) for r in children)
    assert not running(store)
    assert "Traceback" not in output(tmp_path)


def test_sigterm_to_a_one_worker_joblib_sweep_ends_it_killed_without_a_traceback(store, tmp_path):
    """With one worker the job runs in the launcher's own process; the SIGTERM handler the
    sweep set is restored before the interpreter tears its modules down."""
    proc = start(
        store,
        tmp_path,
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=1",
        "solver=stuck",
        "seed=0,1",
        "tracking.log_model=false",
    )
    wait_for(lambda: len(running(store)) == 2, "the parent and the job to run")
    proc.terminate()
    assert proc.wait(timeout=LIMIT_S) != 0
    wait_for(lambda: not running(store), "every run to end")
    parent, children = parent_and_children(store)
    assert parent.info.status == "KILLED"
    assert len(children) == 1 and killed_with_reason(children[0])
    assert "Traceback" not in output(tmp_path), output(tmp_path)


@pytest.mark.slow
def test_sigterm_to_a_submitit_launcher_stops_its_jobs(store, tmp_path):
    proc = start(
        store,
        tmp_path,
        "-m",
        "hydra/launcher=submitit_local",
        "solver=stuck",
        "seed=0,1",
        "tracking.log_model=false",
    )
    wait_for(lambda: len(running(store)) == 3, "the parent and both jobs to run")
    pids = run_pids(store)
    proc.terminate()
    assert proc.wait(timeout=LIMIT_S) != 0
    wait_for(lambda: gone(pids - {proc.pid}), "the jobs to stop")
    wait_for(lambda: not running(store), "every run to end")
    parent, children = parent_and_children(store)
    assert parent.info.status == "KILLED"
    assert len(children) == 2 and all(killed_with_reason(r) for r in children)


# -- exit status and one-line messages -----------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, status, message",
    [
        (("tracking.uri=nosuchscheme://x",), 3, "not a tracking URI MLflow knows"),
        (("dataset=../solver/libsvm",), 2, "unknown dataset '../solver/libsvm'"),
        (("seed=4294967296",), 2, "seed must be an integer from 0 to 2**32 - 1"),
        (
            ("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0", "seed=0,1"),
            2,
            "hydra.launcher.n_jobs must be a number of worker processes",
        ),
    ],
)
def test_bad_inputs_are_answered_in_one_line(store, tmp_path, overrides, status, message):
    done = svmlab(*train_args_for(store, "solver=liblinear", *overrides), cwd=tmp_path)
    assert done.returncode == status, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not running(store)


def test_a_read_only_store_is_named(store, tmp_path):
    read_only = f"tracking.uri='sqlite:///file:{store}?mode=ro&uri=true'"
    done = svmlab(*train_args_for(store, "solver=liblinear", read_only), cwd=tmp_path)
    assert done.returncode == 3
    assert "is read-only" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("sweep", [False, True], ids=["run", "sweep"])
def test_an_unusable_artifact_folder_leaves_no_run_running(store, tmp_path, sweep):
    (tmp_path / "mlruns").write_text("a file where the artifact folder should be")
    args = ("-m", "seed=0,1") if sweep else ()
    done = svmlab(*train_args_for(store, "solver=liblinear", *args), cwd=tmp_path)
    assert done.returncode != 0
    assert "a file stands where a folder of it should be" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert runs(store) and not running(store)


def test_a_sweep_folder_that_cannot_be_created_starts_nothing(store, tmp_path):
    (tmp_path / "blocked").write_text("a file")
    done = svmlab(
        *train_args_for(
            store, "-m", "solver=liblinear", "seed=0,1", f"hydra.sweep.dir={tmp_path}/blocked/sweep"
        ),
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "cannot start the sweep: the sweep folder" in done.stderr
    assert not running(store)


def failed_run_without_trace(store) -> str:
    client = MlflowClient(f"sqlite:///{store}")
    run_id = client.create_run(client.create_experiment("svmlab")).info.run_id
    client.set_terminated(run_id, "FAILED")
    return run_id


@pytest.mark.parametrize(
    "args, status, words",
    [
        (
            ["runs", "plot", "deadbeef", "--tracking-uri", "{uri}"],
            2,
            "svmlab runs plot: error: no run deadbeef in the tracking store",
        ),
        (
            ["runs", "plot", failed_run_without_trace, "--tracking-uri", "{uri}"],
            2,
            "(FAILED) has no trace (trace/trace.parquet)",
        ),
        (["analyze", "--measure", "test_acc"], 2, "Did you mean 'test_accuracy'?"),
        (["tune", "solver=libsvn", "tracking.uri={uri}"], 2, "Did you mean 'libsvm'?"),
        (
            ["runs", "reap", "--tracking-uri", "sqlite:///{tmp}/none.db"],
            3,
            "svmlab runs reap: error: no tracking store at sqlite:///",
        ),
        (
            ["runs", "plot", "deadbeef", "--tracking-uri", "sqlite:///{tmp}/none.db"],
            3,
            "no tracking store at",
        ),
        (["analyze", "--tracking-uri", "sqlite:///{tmp}/none.db"], 3, "no tracking store at"),
        (
            ["workflow", "table", "--tracking-uri", "sqlite:///{tmp}/none.db"],
            3,
            "no tracking store at",
        ),
    ],
    ids=["unknown run", "no trace", "measure", "tune option", "reap", "plot", "analyze", "table"],
)
def test_mistakes_are_one_line_naming_the_command_and_create_nothing(
    store, tmp_path, capsys, monkeypatch, args, status, words
):
    """One line, the command's status, close names where a name is picked from a list; a
    command that only reads creates no store."""
    from svmlab.app import cli

    monkeypatch.chdir(tmp_path)
    args = [
        a(store) if callable(a) else a.format(uri=f"sqlite:///{store}", tmp=tmp_path) for a in args
    ]
    assert cli.main(args) == status
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err
    assert err.startswith(f"svmlab {args[0]}"), err  # names the command that failed
    assert not (tmp_path / "none.db").exists() and not (tmp_path / "mlruns").exists()


def test_a_warning_is_one_line_without_its_source():
    code = (
        "import warnings, svmlab.app\n"
        "warnings.warn('Pegasos stopped early,\\n raise max_iter', RuntimeWarning)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stderr == (
        "svmlab: warning: RuntimeWarning: Pegasos stopped early, raise max_iter\n"
    )


def test_a_store_whose_folder_is_missing_is_refused_unless_asked(tmp_path, capsys):
    store = tmp_path / "nosuchdir" / "mlflow.db"
    typo = (f"tracking.uri=sqlite:///{store}", "solver=liblinear", "tracking.log_model=false")
    for sweep in ((), ("-m", "seed=0,1")):
        with pytest.raises(SystemExit) as refused:
            train(tmp_path / "unused.db", *sweep, *typo)
        assert refused.value.code == 2
        err = capsys.readouterr().err
        assert f"the folder of the tracking store sqlite:///{store} does not exist" in err
        assert "tracking.new_folder=true" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert train(tmp_path / "unused.db", *typo, "tracking.new_folder=true") == 0
    assert f"creating a new tracking store at sqlite:///{store}" in capsys.readouterr().out
    assert runs(store)


def test_a_sweep_that_fails_to_start_leaves_no_folder_and_no_parent_run(store, tmp_path, capsys):
    with pytest.raises(SystemExit) as refused:
        train(store, "-m", "solver=libsvn,liblinear", "seed=0,1")
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "unknown solver 'libsvn'" in err and "Did you mean 'libsvm'?" in err
    assert not (tmp_path / "multirun").exists()
    assert runs(store) == []


def test_a_file_store_is_named_and_leaves_no_job_folder(tmp_path):
    done = svmlab(
        "train", "solver=liblinear", f"tracking.uri=file://{tmp_path}/mlruns", cwd=tmp_path
    )
    assert done.returncode == 3
    assert "is a file store, which MLflow 3 no longer writes to" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "text, problem",
    [
        ("(sqlite3.OperationalError) database is locked", "locked"),
        ("(sqlite3.OperationalError) attempt to write a readonly database", "read-only"),
        ("(sqlite3.OperationalError) database or disk is full", "full"),
        ("(sqlite3.DatabaseError) database disk image is malformed", "damaged"),
        ("(sqlite3.DatabaseError) file is not a database", "damaged"),
        (
            "HTTPConnectionPool(host='db.lab', port=5000): Max retries exceeded (Connection refused)",
            "unreachable",
        ),
    ],
)
def test_store_errors_are_named(text, problem):
    uri = "http://db.lab:5000" if problem == "unreachable" else "sqlite:///mlflow.db"
    assert store_problem(RuntimeError(text), uri).startswith(problem)
    assert store_problem(ValueError("C must be positive"), uri) is None


def download_failure() -> DownloadError:
    """The error a sweep's job met without a network: a download whose host did not resolve."""
    try:
        try:
            raise socket.gaierror(-2, "Name or service not known")
        except OSError as exc:
            raise DownloadError(f"download of http://data.lab/a4a failed: {exc}") from exc
    except DownloadError as exc:
        return exc


@pytest.mark.parametrize(
    "uri", ["sqlite:///mlflow.db", "http://db.lab:5000", "postgresql://user@db.lab/mlflow"]
)
def test_a_failed_download_is_not_the_stores(uri):
    """A network failure is the store's only when it names the store's host, and an error svmlab
    raised about the data names its own cause: a download that failed is never the store's."""
    assert store_error_line(download_failure(), uri) is None
    assert store_problem(OSError("[Errno -2] Name or service not known"), uri) is None
    refused = RuntimeError("HTTPConnectionPool(host='data.lab', port=80): Connection refused")
    assert store_problem(refused, uri) is None


def test_a_store_on_a_host_that_does_not_resolve_is_unreachable(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    uri = "http://nosuchhost.invalid:5000"
    with pytest.raises(Exception) as raised:
        MlflowClient(uri).search_experiments()
    line = store_error_line(raised.value, uri)
    assert line.startswith(f"the tracking store {uri} is unreachable")


def test_a_download_failure_in_a_sweep_is_reported_once_before_it_starts(
    tmp_path, isolated_data_env
):
    """No route to the LIBSVM site: the sweep's dataset is made available before any job, so
    the download fails once, in one line, with the jobs it hit (status 2), nothing is created
    and nothing blames the tracking store."""
    store = tmp_path / "mlflow.db"
    done = svmlab(
        *train_args_for(
            store,
            "-m",
            "solver=liblinear",
            "dataset=a4a",
            "seed=0,1,2",
            f"paths.cache_dir={tmp_path / 'cache'}",
            "tracking.log_model=false",
        ),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"svmlab: error: cannot start the sweep: a4a is not in the cache "
        f"{tmp_path / 'cache' / 'a4a'} and no data folder is set"
    )
    assert "download of http://127.0.0.1:" in line and line.endswith("(3 jobs: #0, #1, #2)")
    assert "the tracking store" not in done.stdout + done.stderr
    assert not store.exists() and not (tmp_path / "cache").exists()


def damaged(store, damage: str) -> str:
    """A store that is not a readable SQLite database; returns its sha256."""
    if damage == "halved":  # a store with a run, cut to half its size
        client = MlflowClient(f"sqlite:///{store}")
        client.create_run(client.create_experiment("svmlab"))
        os.truncate(store, store.stat().st_size // 2)
    else:
        store.write_text("experiment,run\nsvmlab,1\n")
    return hashlib.sha256(store.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "damage, command",
    [("halved", "train"), ("halved", "sweep"), ("halved", "reap"), ("text", "train")],
)
def test_a_damaged_store_is_named_and_left_as_it_is(tmp_path, damage, command):
    store = tmp_path / "mlflow.db"
    digest = damaged(store, damage)
    args = (
        ["runs", "reap", "--tracking-uri", f"sqlite:///{store}"]
        if command == "reap"
        else train_args_for(
            store,
            "solver=liblinear",
            "tracking.log_model=false",
            *(["-m"] if command == "sweep" else []),
        )
    )
    done = svmlab(*args, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "error" in line]
    assert f"the tracking store sqlite:///{store} is damaged" in line
    assert f"left {store} as it is: restore it from a backup, or start a new store" in line
    assert "Traceback" not in done.stderr
    assert hashlib.sha256(store.read_bytes()).hexdigest() == digest


# -- store outages ---------------------------------------------------------------------------------


def server_sweep(url: str, tmp_path, *overrides: str, **env: str) -> subprocess.Popen:
    """A sweep of `solver=slow` jobs that end once ``tmp_path/stop`` exists, logged to the
    server at ``url``; its output in ``tmp_path/out.txt``."""
    client_dir = tmp_path / "client"
    client_dir.mkdir(exist_ok=True)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            *train_args_for(
                client_dir / "unused.db",
                "-m",
                "solver=slow",
                f"+solver.stop_file={tmp_path / 'stop'}",
                "tracking.log_model=false",
                f"tracking.uri={url}",
                *overrides,
            ),
        ],
        env=child_env(**env),
        stdout=open(tmp_path / "out.txt", "w"),
        stderr=subprocess.STDOUT,
        cwd=client_dir,
        start_new_session=True,
    )


def running_on(url: str) -> list:
    """The RUNNING runs of experiment svmlab on the server at ``url``."""
    client = MlflowClient(url)
    found = client.get_experiment_by_name("svmlab")
    return (
        client.search_runs([found.experiment_id], "attributes.status = 'RUNNING'") if found else []
    )


def test_the_processes_of_a_sweep_share_one_wait_for_their_store(tmp_path, refused_url):
    """Two jobs' waits on one sweep folder: the second, found away after the first's window is
    spent, tries once; a later job is told not to start; a store that answers ends the
    outage on record."""
    calls = []

    def refused():
        calls.append(1)
        raise ConnectionError(f"{refused_url}: Failed to establish a new connection: refused")

    first = Patience(refused_url, window_s=0.5, shared=tmp_path)
    with pytest.raises(ConnectionError):
        first(refused)
    assert len(calls) > 1 and gone_line(tmp_path, refused_url)
    calls.clear()
    with pytest.raises(ConnectionError):
        Patience(refused_url, window_s=600, shared=tmp_path)(refused)
    assert len(calls) == 1  # the sweep's wait was spent: no window of its own
    assert Patience(refused_url, window_s=600, shared=tmp_path)(lambda: "back") == "back"
    assert gone_line(tmp_path, refused_url) is None and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_sweep_whose_server_is_gone_for_good_ends_within_its_wait(new_store, tmp_path):
    """Six jobs on two joblib workers at svmlab's HTTP settings, tracking.wait_s=45: the
    server is killed while two jobs train and does not come back. The sweep's wait is one
    budget (no timing is asserted: the queued jobs never start, so no job waits out a wait of its
    own; docs/reliability.md gives the measured time): it exits 3, and one line
    names the runs it left and the command that ends them; once the server is back, the first
    svmlab command on it (here `runs plot`) ends them KILLED."""
    assert {name: os.environ[name] for name in HTTP_LIMITS} == HTTP_LIMITS  # the defaults
    wait_s = 45  # the jobs that are training end after the wait has started, within it
    backend = f"sqlite:///{new_store(tmp_path / 'server.db')}"
    port = closed_port()
    with tracking_server(backend, tmp_path / "artifacts", port) as url:
        proc = server_sweep(
            url,
            tmp_path,
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "seed=0,1,2,3,4,5",
            f"tracking.wait_s={wait_s}",
        )
        wait_for(lambda: len(running_on(url)) == 3, "the parent and two jobs to run")
        left = {r.info.run_id for r in running_on(url)}
    (tmp_path / "stop").touch()  # the fits end; their results find the server gone
    assert proc.wait(timeout=600) == 3  # a safety net; one shared wait is what the lines show
    out = output(tmp_path)
    (never,) = [
        x
        for x in out.splitlines()
        if x.endswith("this job did not start") and x.startswith("  failed: ")
    ]
    assert never.startswith("  failed: 4 jobs (") and "Traceback" not in out
    (line,) = [x for x in out.splitlines() if "runs left RUNNING" in x]
    assert set(line.split("RUNNING: ")[1].split(";")[0].split(", ")) == left
    assert f"svmlab runs reap --tracking-uri {url}" in line
    with tracking_server(backend, tmp_path / "artifacts", port) as url:
        done = svmlab("runs", "plot", sorted(left)[0], "--tracking-uri", url, cwd=tmp_path)
        assert done.stderr.count("its job lost the tracking store") == 3, done.stderr
        client = MlflowClient(url)
        found = client.search_runs([client.get_experiment_by_name("svmlab").experiment_id])
    assert {r.info.run_id for r in found} == left
    assert all(killed_with_reason(r) for r in found)


@pytest.mark.slow
def test_a_sigkilled_launcher_on_a_server_leaves_its_parent_killed(new_store, tmp_path):
    """joblib, 2 workers, on a tracking server: the launcher is SIGKILLed while two jobs train;
    the jobs end their runs and the parent run KILLED, with no reap, and say nothing of joblib's
    leaked semaphores."""
    backend = f"sqlite:///{new_store(tmp_path / 'server.db')}"
    with tracking_server(backend, tmp_path / "artifacts") as url:
        proc = server_sweep(
            url, tmp_path, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1,2"
        )
        wait_for(lambda: len(running_on(url)) == 3, "the parent and two jobs to run")
        workers = {int(r.data.tags[PID_TAG]) for r in running_on(url)} - {proc.pid}
        proc.kill()
        proc.wait(timeout=LIMIT_S)
        wait_for(lambda: gone(workers), "the orphan workers to stop")
        wait_for(lambda: not running_on(url), "every run to end")
        client = MlflowClient(url)
        found = client.search_runs([client.get_experiment_by_name("svmlab").experiment_id])
    assert len(found) == 3 and all(killed_with_reason(r) for r in found)
    assert "leaked" not in output(tmp_path) and "Warning" not in output(tmp_path)


@pytest.mark.slow
def test_a_sweep_waits_out_a_tracking_server_that_blinks(new_store, tmp_path):
    """The server is stopped while two jobs of a 4-job joblib sweep train, and started again on
    the same port and database once a job waits for it: each job ends FINISHED exactly once,
    nothing is left RUNNING, and the jobs said when they waited and when they went on."""
    backend = f"sqlite:///{new_store(tmp_path / 'server.db')}"
    port = closed_port()
    with tracking_server(backend, tmp_path / "artifacts", port) as url:
        proc = server_sweep(
            url,
            tmp_path,
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "seed=0,1,2,3",
            "tracking.wait_s=600",
        )
        wait_for(lambda: len(running_on(url)) == 3, "the parent and two jobs to run")
    (tmp_path / "stop").touch()  # the fits end; their results find the server gone
    wait_for(lambda: "waiting up to 600 s" in output(tmp_path), "a job to wait for the store")
    with tracking_server(backend, tmp_path / "artifacts", port) as url:
        assert proc.wait(timeout=600) == 0, output(tmp_path)
        client = MlflowClient(url)
        found = client.search_runs([client.get_experiment_by_name("svmlab").experiment_id])
    jobs = [r for r in found if r.data.tags.get("svmlab.role") != "sweep"]
    assert sorted(r.data.tags["seed"] for r in jobs) == ["0", "1", "2", "3"]
    assert {r.info.status for r in found} == {"FINISHED"}
    out = output(tmp_path)
    assert "is back after" in out and "Traceback" not in out


@pytest.mark.slow
def test_a_run_whose_sqlite_store_was_locked_for_a_while_is_ended(store, tmp_path):
    """SQLite's write lock is held (longer than MLflow's 20 s wait) while the run logs, until
    the run says it waits for the store: the run goes on once the lock is released and ends
    FINISHED."""
    import sqlite3

    started, stop = tmp_path / "started", tmp_path / "stop"
    proc = start(
        store,
        tmp_path,
        "solver=slow",
        f"+solver.started_file={started}",
        f"+solver.stop_file={stop}",
        "tracking.log_model=false",
    )
    wait_for(started.exists, "the fit to start")
    db = sqlite3.connect(store, timeout=60, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    stop.touch()
    wait_for(
        lambda: (
            "is locked (another process holds SQLite's write lock); waiting up to"
            in output(tmp_path)
        ),
        "the run to wait for the lock",
    )
    db.execute("COMMIT")
    db.close()
    assert proc.wait(timeout=600) == 0, output(tmp_path)
    (run,) = runs(store)
    assert run.info.status == "FINISHED"
    assert "is back after" in output(tmp_path) and "Traceback" not in output(tmp_path)
