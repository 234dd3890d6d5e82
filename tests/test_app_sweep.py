"""Multirun sweeps: parent and child runs, failing jobs, progress, resume, parallel launchers."""

import json
import os
import re
import stat
import subprocess
import time

import mlflow
import pytest
from mlflow import MlflowClient
from omegaconf import OmegaConf

from support.runs import PROGRESS, parent_and_children, runs, train, train_process
from svmlab.app.launch.sweep import read_outcomes
from svmlab.recording.config import config_digest
from svmlab.tracking.queries import load_trace


def test_failing_jobs_do_not_stop_the_sweep_and_are_counted(store, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train(store, "-m", "solver=liblinear,nan_trace", "seed=0,1", "tracking.log_model=false")
    assert exit_info.value.code == 1
    out = capsys.readouterr().out

    parent, children = parent_and_children(store)
    assert parent.info.status == "FAILED"
    assert "solver=liblinear,nan_trace seed=0,1" in parent.data.params["sweep.overrides"]
    assert parent.data.params["sweep.launcher"] == "BasicLauncher"
    metrics = parent.data.metrics
    assert (
        metrics["jobs_total"],
        metrics["jobs_finished"],
        metrics["jobs_failed"],
        metrics["jobs_skipped"],
        metrics["jobs_missing"],
    ) == (4, 2, 2, 0, 0)

    # the NaN trace fails its runs, which stay FAILED with the reason
    status = {(r.data.tags["solver"], r.data.tags["seed"]): r.info.status for r in children}
    assert status == {
        ("liblinear", "0"): "FINISHED",
        ("liblinear", "1"): "FINISHED",
        ("nan_trace", "0"): "FAILED",
        ("nan_trace", "1"): "FAILED",
    }
    assert all("NaN" in r.data.tags["svmlab.error"] for r in children if r.info.status == "FAILED")

    lines = PROGRESS.findall(out)
    assert sorted(int(done) for done, *_ in lines) == [1, 2, 3, 4]
    assert {total for _, total, *_ in lines} == {"4"}
    assert sorted(s for *_, s in lines) == ["FAILED", "FAILED", "FINISHED", "FINISHED"]
    assert re.search(
        r"FINISHED  test_accuracy=0\.9\d{3}  \d+\.\ds  about \d+ (s|min) left$", out, re.MULTILINE
    )  # the time left at the pace so far, but for the last
    assert re.search(r"^\[4/4\] .*\d+\.\ds$", out, re.MULTILINE)
    assert "the same error as #2" in out
    assert "4 jobs: 2 finished, 2 failed, 0 skipped" in out

    table = mlflow.artifacts.load_text(f"{parent.info.artifact_uri}/jobs.tsv").splitlines()
    assert len(table) == 5 and table[0].startswith("job\tname\tstatus")

    # where the finished job's time went, for the sweep benchmark; no figure unless asked
    outcomes = read_outcomes(store.parent / "multirun")
    finished = next(o for o in outcomes if o["status"] == "FINISHED")
    assert set(finished["phases"]) == {"store", "data", "compile", "fit", "evaluate"}
    assert 0 < sum(finished["phases"].values()) <= finished["time_s"]
    assert finished["phases"]["fit"] >= finished["metrics"]["fit_time_s"]
    ok = next(r for r in children if r.info.status == "FINISHED")
    trace_files = {
        a.path for a in MlflowClient(f"sqlite:///{store}").list_artifacts(ok.info.run_id, "trace")
    }
    assert trace_files == {"trace/trace.parquet"}


def test_resume_completes_an_interrupted_sweep_without_duplicates(store, capsys):
    common = ("solver=liblinear", "tracking.log_model=false")
    assert train(store, "-m", *common, "seed=0,1") == 0
    assert train(store, "-m", *common, "seed=0,1,2", "+resume=true") == 0
    out = capsys.readouterr().out

    parent, children = parent_and_children(store)
    assert parent.info.status == "FINISHED"
    assert (parent.data.metrics["jobs_skipped"], parent.data.metrics["jobs_finished"]) == (2, 1)
    assert [r.data.tags["seed"] for r in children] == ["2"]
    every_job = [r for r in runs(store) if r.data.tags.get("svmlab.role") != "sweep"]
    assert sorted(r.data.tags["seed"] for r in every_job) == ["0", "1", "2"]
    assert out.count("SKIPPED  FINISHED before as run") == 2

    # again: nothing to do, and no new (empty) parent run
    parents = [r.info.run_id for r in runs(store) if r.data.tags.get("svmlab.role") == "sweep"]
    assert train(store, "-m", *common, "seed=0,1,2", "+resume=true") == 0
    assert "nothing to do, so no parent run was kept" in capsys.readouterr().out
    assert [
        r.info.run_id for r in runs(store) if r.data.tags.get("svmlab.role") == "sweep"
    ] == parents


def test_config_digest_ignores_only_resume_the_store_address_and_the_reap_limit():
    cfg = OmegaConf.create(
        {
            "seed": 0,
            "solver": {"C": 1.0},
            "tracking": {"uri": "sqlite:///a.db", "experiment": "svmlab", "stale_after_s": 600.0},
        }
    )
    moved = OmegaConf.merge(
        cfg,
        {
            "tracking": {"uri": "http://127.0.0.1:5000", "stale_after_s": 60.0, "log_figure": True},
            "resume": True,
        },
    )

    def digest(config) -> str:
        return config_digest(OmegaConf.to_container(config))

    assert digest(moved) == digest(cfg)
    for change in ({"solver": {"C": 2.0}}, {"seed": 1}, {"tracking": {"experiment": "other"}}):
        assert digest(OmegaConf.merge(cfg, change)) != digest(cfg)


def test_resume_must_be_a_boolean(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train(tmp_path / "mlflow.db", "solver=liblinear", "+resume=maybe")
    assert "resume must be true or false; got 'maybe'" in capsys.readouterr().err


@pytest.mark.slow
def test_two_parallel_sweeps_on_a_new_sqlite_store_lose_nothing(tmp_path):
    """12 jobs, 2 launching processes x 2 workers, all opening one new SQLite file."""
    store = tmp_path / "mlflow.db"
    n = 6  # jobs per sweep: each worker trains several while the other three write
    seeds = "seed=" + ",".join(map(str, range(n)))
    parallel = ("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", seeds)
    models = train_process(
        store,
        *parallel,
        "solver=liblinear",
        f"hydra.sweep.dir={tmp_path}/models",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    traces = train_process(
        store,
        *parallel,
        "solver=long_trace",
        "+solver.n_rows=1500",
        "tracking.log_model=false",
        f"hydra.sweep.dir={tmp_path}/traces",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    outputs = [proc.communicate(timeout=600)[0] for proc in (models, traces)]
    assert [models.returncode, traces.returncode] == [0, 0], outputs
    for out in outputs:
        assert len(PROGRESS.findall(out)) == n and f"{n} jobs: {n} finished, 0 failed" in out

    client = MlflowClient(f"sqlite:///{store}")
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    found = runs(store)
    assert len(found) == 2 * n + 2 and {r.info.status for r in found} == {"FINISHED"}
    for folder, solver in (("models", "liblinear"), ("traces", "long_trace")):
        _, children = parent_and_children(store, tmp_path / folder)
        assert sorted(int(r.data.tags["seed"]) for r in children) == list(range(n))
        assert {r.data.tags["solver"] for r in children} == {solver}
    for run in found:
        if run.data.tags.get("solver") == "long_trace":
            trace = load_trace(f"sqlite:///{store}", run.info.run_id)
            assert list(trace["iteration"]) == list(range(1500)), run.info.run_id
            for key in ("trace/objective_hinge_l2", "trace/gap", "trace/time_s"):
                steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, key))
                assert steps[0] == 0 and steps[-1] == 1499 and len(steps) <= 1000, key
        elif run.data.tags.get("solver") == "liblinear":
            assert "test_accuracy" in run.data.metrics
            info = mlflow.models.get_model_info(f"runs:/{run.info.run_id}/model")
            assert info.signature is not None


def test_submitit_local_runs_each_job_in_its_own_process(store, tmp_path):
    proc = train_process(
        store,
        "-m",
        "hydra/launcher=submitit_local",
        "solver=liblinear",
        "seed=0,1",
        "tracking.log_model=false",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out
    parent, children = parent_and_children(store)
    assert parent.data.params["sweep.launcher"] == "LocalLauncher"
    assert parent.info.status == "FINISHED" and parent.data.metrics["jobs_finished"] == 2
    assert sorted(r.data.tags["seed"] for r in children) == ["0", "1"]
    assert {r.info.status for r in children} == {"FINISHED"}
    logs = list((tmp_path / "multirun" / ".submitit").glob("*/*_log.out"))
    assert len(logs) == 2  # one process, one log per job
    assert "2 jobs: 2 finished" in out


def test_submitit_slurm_config_reaches_sbatch(store, tmp_path, monkeypatch):
    """The SLURM launcher writes its sbatch script from the config; stand-in sbatch and srun
    commands refuse to run it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for command in ("sbatch", "srun"):  # submitit looks for both
        program = bin_dir / command
        program.write_text(f"#!/bin/sh\necho '{command}: error: no cluster here' >&2\nexit 1\n")
        program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = train_process(
        store,
        "-m",
        "hydra/launcher=submitit_slurm",
        "hydra.launcher.partition=cpu",
        "hydra.launcher.timeout_min=30",
        "hydra.launcher.cpus_per_task=2",
        "hydra.launcher.array_parallelism=3",
        "solver=liblinear",
        "seed=0,1,2,3",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode != 0 and "no cluster here" in out
    (script,) = (tmp_path / "multirun" / ".submitit").rglob("*submission_file*.sh")
    text = script.read_text()
    for line in (
        "#SBATCH --partition=cpu",
        "#SBATCH --time=30",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --array=0-3%3",
    ):
        assert line in text, text
    parent, children = parent_and_children(store)
    assert parent.info.status == "KILLED" and children == []  # nothing ran, nothing left RUNNING


def test_a_sweep_that_cannot_reach_its_store_stops_before_any_job(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train(
            tmp_path / "mlflow.db",
            "-m",
            "solver=liblinear",
            "seed=0,1",
            "tracking.uri=nosuchscheme://store",
        )
    assert exit_info.value.code == 3  # the store's fault
    captured = capsys.readouterr()
    assert "cannot start the sweep" in captured.err and "nosuchscheme" in captured.err
    assert not PROGRESS.findall(captured.out)


def test_a_sweep_with_a_bad_value_creates_nothing(store, capsys):
    """Every job's config is checked before the parent run, the store or a folder exists: one
    line per distinct problem, status 2."""
    with pytest.raises(SystemExit) as exit_info:
        train(store, "-m", "solver=alm_gap,liblinear", "solver.C=-1", "seed=0,1")
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 2, captured.err  # two solvers, two messages; each for two jobs
    assert all(
        line.startswith(
            "svmlab: error: cannot start the sweep: invalid solver parameter: The 'C' parameter of "
        )
        for line in lines
    )
    assert lines[0].endswith("(2 jobs: #0, #1)") and lines[1].endswith("(2 jobs: #2, #3)")
    assert captured.out == ""
    assert runs(store) == [] and not (store.parent / "multirun").exists()


def test_a_misspelt_solver_in_a_sweep_names_no_run(store, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train(store, "-m", "solver=liblinear,libsvn", "seed=0,1")
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "unknown solver 'libsvn'" in captured.err and "(2 jobs: #2, #3)" in captured.err
    assert not re.search(r"[0-9a-f]{32}", captured.out + captured.err)  # no run id
    assert "parent run" not in captured.out + captured.err
    assert runs(store) == [] and not (store.parent / "multirun").exists()


@pytest.mark.usefixtures("isolated_data_env")
def test_a_sweep_on_a_missing_data_folder_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(SystemExit) as exit_info:
        train(
            tmp_path / "mlflow.db",
            "-m",
            "solver=liblinear",
            "dataset=heart_scale",
            "seed=0,1",
            f"paths.data_dir={missing}",
        )
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"svmlab: error: cannot start the sweep: the data folder {missing} ")
    assert line.endswith("(2 jobs: #0, #1)")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no folder, no cache


def test_the_time_left_is_estimated_at_the_pace_of_the_jobs_so_far():
    from svmlab.app.launch.sweep import time_left

    started = time.time() - 600  # 2 of 8 jobs in ten minutes: 30 minutes for the other 6
    assert time_left(started, 2, 8) == "  about 30 min left"
    assert time_left(started, 7, 8) == "  about 86 s left"
    assert time_left(started - 5400, 2, 8) == "  about 5.0 h left"
    assert time_left(started, 8, 8) == time_left(None, 2, 8) == time_left(started, 2, None) == ""


def test_a_write_that_lost_a_race_for_a_unique_row_is_tried_again():
    from mlflow.exceptions import MlflowException

    from svmlab.tracking.store import again_if_duplicate as _again_if_duplicate

    calls = []

    def insert_once_taken():
        calls.append(1)
        if len(calls) == 1:
            raise MlflowException(
                "(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.name"
            )
        return "linked"

    assert _again_if_duplicate(insert_once_taken) == "linked" and len(calls) == 2
    with pytest.raises(MlflowException, match="no such table"):
        _again_if_duplicate(lambda: (_ for _ in ()).throw(MlflowException("no such table")))
    # a schema object another process created first (Optuna's storage on a new database)
    opened = []

    def open_once_created():
        opened.append(1)
        if len(opened) == 1:
            raise ValueError(
                '(psycopg.errors.DuplicateObject) type "studydirection" already exists'
            )
        return "opened"

    assert _again_if_duplicate(open_once_created, errors=(ValueError,)) == "opened"
    assert len(opened) == 2


def test_a_sweep_composes_each_job_once_in_the_launching_process(store, monkeypatch):
    """The sweep's checks compose every job (Hydra's compose API) and the basic launcher
    composes each one again to run it; Hydra's sweeper does not compose them a third time."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    composed = []
    load_sweep_config = ConfigLoaderImpl.load_sweep_config

    def counted(self, master_config, sweep_overrides):
        composed.append(" ".join(sweep_overrides))
        return load_sweep_config(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counted)
    train(store, "-m", "solver=liblinear", "seed=0,1,2", "tracking.log_model=false")
    assert sorted(re.search(r"\bseed=(\d)", job)[1] for job in composed) == ["0", "1", "2"]
    assert len(runs(store)) == 4  # the parent run and its three jobs


def joblib_sweep(store, *overrides: str) -> tuple[int, str, str]:
    """A 2-worker joblib sweep as a child process: (exit status, stdout, stderr)."""
    proc = train_process(
        store,
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "tracking.log_model=false",
        *overrides,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def test_a_joblib_sweep_checks_its_jobs_in_the_worker_processes_that_run_them(store):
    status, out, err = joblib_sweep(store, "solver=liblinear", "seed=0,1,2,3")
    assert status == 0, out + err
    assert "4 jobs: 4 finished, 0 failed" in out and "Warning" not in err, err
    sweep_dir = store.parent / "multirun"
    state = json.loads((sweep_dir / ".svmlab/sweep.json").read_text())
    checked_in, launcher_pid = state["checked_in"], int(state["launcher"]["svmlab.pid"])
    assert checked_in and launcher_pid not in checked_in  # the checks ran in workers
    ran_in = {o["pid"] for o in read_outcomes(sweep_dir)}
    assert ran_in & set(checked_in), (ran_in, checked_in)  # joblib kept the same pool


def test_a_joblib_sweep_with_a_bad_value_creates_nothing(store):
    """The jobs checked in the workers are refused as in the launching process: one line per
    distinct problem, status 2, no run and no folder."""
    status, out, err = joblib_sweep(store, "solver=alm_gap,liblinear", "solver.C=-1", "seed=0,1")
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert all(
        line.startswith(
            "svmlab: error: cannot start the sweep: invalid solver parameter: The 'C' parameter of "
        )
        for line in lines
    )
    assert lines[0].endswith("(2 jobs: #0, #1)") and lines[1].endswith("(2 jobs: #2, #3)")
    assert out == ""
    assert runs(store) == [] and not (store.parent / "multirun").exists()
