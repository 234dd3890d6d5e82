"""svmlab's parallel launcher (hydra/launcher=parallel): real sweeps with two worker processes."""

import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import MissingConfigException
from hydra.types import HydraContext

from hydra_plugins.svmlab_launcher.parallel_launcher import ParallelLauncher
from support.runs import PROGRESS, create_store, parent_and_children, runs, train, train_process
from svmlab.config import register_schema
from svmlab.launcher import worker_count

PARALLEL = ("-m", "hydra/launcher=parallel", "hydra.launcher.n_jobs=2")
SMALL_JOB = ("solver=liblinear", "tracking.log_model=false")


def test_every_job_runs_in_a_worker_as_a_child_of_the_sweep(tmp_path, capfd):
    store = tmp_path / "mlflow.db"
    assert train(store, *PARALLEL, *SMALL_JOB, "seed=0,1,2,3") == 0
    out = capfd.readouterr().out

    parent, children = parent_and_children(store)
    assert parent.info.status == "FINISHED"
    assert parent.data.params["sweep.launcher"] == "ParallelLauncher"
    assert (parent.data.metrics["jobs_total"], parent.data.metrics["jobs_finished"]) == (4, 4)
    assert {r.info.status for r in children} == {"FINISHED"}
    assert sorted((r.data.tags["svmlab.job_num"], r.data.tags["seed"]) for r in children) == [
        ("0", "0"), ("1", "1"), ("2", "2"), ("3", "3")]
    assert {r.data.tags["svmlab.sweep_dir"] for r in children} == {str(tmp_path / "multirun")}
    for job in range(4):  # Hydra's job folder: the job's overrides, composed config and log
        folder = tmp_path / "multirun" / str(job)
        assert f"seed={job}" in yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text())
        assert yaml.safe_load((folder / ".hydra" / "config.yaml").read_text())["seed"] == job
        assert (folder / "train.log").is_file()

    assert "Launching 4 jobs in 2 worker processes" in out
    lines = PROGRESS.findall(out)
    assert sorted(int(done) for done, *_ in lines) == [1, 2, 3, 4]
    assert sorted(int(job) for _, _, job, *_ in lines) == [0, 1, 2, 3]
    assert "4 jobs: 4 finished, 0 failed, 0 skipped" in out


def test_workers_see_the_environment_of_the_launching_process_as_it_is_now(tmp_path, capfd,
                                                                           monkeypatch):
    """The fork server may have started in an earlier sweep of this process, before this
    variable existed; the jobs resolve it in their workers."""
    monkeypatch.setenv("SVMLAB_TEST_EXPERIMENT", "from-the-environment")
    store = tmp_path / "mlflow.db"
    assert train(store, *PARALLEL, *SMALL_JOB, "seed=0,1",
                 "tracking.experiment=${oc.env:SVMLAB_TEST_EXPERIMENT}") == 0
    jobs = runs(store, "from-the-environment")
    assert sorted(r.info.status for r in jobs) == ["FINISHED"] * 3  # the parent and two jobs
    assert len(PROGRESS.findall(capfd.readouterr().out)) == 2


def test_failing_jobs_are_counted_and_the_sweep_exits_with_status_1(tmp_path, capfd):
    store = tmp_path / "mlflow.db"
    with pytest.raises(SystemExit) as exit_info:
        train(store, *PARALLEL, "solver=liblinear,nan_trace", "seed=0,-1",
              "tracking.log_model=false")
    assert exit_info.value.code == 1
    out = capfd.readouterr().out

    parent, children = parent_and_children(store)
    assert parent.info.status == "FAILED"
    metrics = parent.data.metrics
    assert (metrics["jobs_total"], metrics["jobs_finished"], metrics["jobs_failed"],
            metrics["jobs_missing"]) == (4, 1, 3, 0)
    status = {(r.data.tags["solver"], r.data.tags["seed"]): r.info.status for r in children}
    assert status == {("liblinear", "0"): "FINISHED", ("nan_trace", "0"): "FAILED"}
    assert sorted(s for *_, s in PROGRESS.findall(out)) == ["FAILED", "FAILED", "FAILED",
                                                            "FINISHED"]
    assert "seed must be a non-negative integer" in out


def test_resume_skips_the_jobs_that_finished_before(tmp_path, capfd):
    store = tmp_path / "mlflow.db"
    assert train(store, *PARALLEL, *SMALL_JOB, "seed=0,1") == 0
    assert train(store, *PARALLEL, *SMALL_JOB, "seed=0,1,2", "+resume=true") == 0
    out = capfd.readouterr().out

    parent, children = parent_and_children(store)
    assert (parent.data.metrics["jobs_skipped"], parent.data.metrics["jobs_finished"]) == (2, 1)
    assert [r.data.tags["seed"] for r in children] == ["2"]
    jobs = [r for r in runs(store) if r.data.tags.get("svmlab.role") != "sweep"]
    assert sorted(r.data.tags["seed"] for r in jobs) == ["0", "1", "2"]
    assert out.count("SKIPPED  FINISHED before as run") == 2


def test_a_config_that_does_not_compose_stops_the_sweep_before_any_job(tmp_path):
    store = tmp_path / "mlflow.db"
    with open(tmp_path / "out.txt", "w+") as out:  # a file: the fork server may outlive the sweep
        proc = train_process(store, *PARALLEL, "solver=liblinear,libsvn", "seed=0", stdout=out,
                             stderr=subprocess.STDOUT)
        assert proc.wait(timeout=120) == 1
        out.seek(0)
        text = out.read()
    assert "Could not find 'solver/libsvn'" in text and "liblinear" in text  # and the options
    parent, children = parent_and_children(store)
    assert parent.info.status == "KILLED" and children == []


def test_a_job_whose_config_does_not_compose_in_its_worker_raises_in_the_launcher():
    """What Hydra's sweeper checks before launching, the launcher reports too."""
    register_schema()
    with initialize_config_module("svmlab.conf", version_base="1.3"):
        config = compose("config", return_hydra_config=True)
        loader = GlobalHydra.instance().config_loader()
        launcher = ParallelLauncher(n_jobs=1)
        launcher.setup(hydra_context=HydraContext(config_loader=loader, callbacks=None),
                       task_function=print, config=config)
        with pytest.raises(MissingConfigException, match="libsvn"):
            launcher.launch([["solver=libsvn"]], initial_job_idx=0)


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_an_interrupted_sweep_ends_its_running_jobs_killed_and_starts_no_more(tmp_path,
                                                                            signal_name):
    store = tmp_path / "mlflow.db"
    create_store(store)
    proc = train_process(store, *PARALLEL, "solver=slow", "seed=0,1,2,3",
                         "tracking.flush_rows=1", "tracking.log_model=false",
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # wait until two jobs train and trace
        tracing = [r for r in runs(store) if "trace/objective_hinge_l2" in r.data.metrics]
        if len(tracing) == 2:
            break
        time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the jobs never started tracing: " + proc.communicate()[0])
    os.kill(proc.pid, getattr(signal, signal_name))  # the launching process only
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0, out

    parent, children = parent_and_children(store)
    assert parent.info.status == "KILLED"
    assert sorted(r.info.status for r in children) == ["KILLED", "KILLED"], out
    assert all("svmlab.error" in r.data.tags for r in children)


def test_worker_count():
    assert worker_count(2, 48) == 2
    assert worker_count(8, 3) == 3  # never more workers than jobs
    assert 1 <= worker_count(-1, 1000) == worker_count(-1, 2000)
    for wrong in (0, -2):
        with pytest.raises(ValueError, match="n_jobs must be -1"):
            worker_count(wrong, 4)


@pytest.mark.parametrize("override, message", [("hydra.launcher.n_job=2", "n_job"),
                                               ("hydra.launcher.n_jobs=two", "n_jobs")])
def test_a_wrong_launcher_setting_fails_at_composition(tmp_path, capsys, override, message):
    with pytest.raises(SystemExit):
        train(tmp_path / "mlflow.db", *PARALLEL, override, *SMALL_JOB, "seed=0")
    assert message in capsys.readouterr().err
    assert runs(tmp_path / "mlflow.db") == []


def python_output(code: str) -> str:
    """What ``code`` prints, run in a new interpreter (a fresh fork server, a clean import)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120).stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads a process's fds in /proc")
def test_the_fork_server_leaves_the_callers_standard_streams_alone():
    """A caller reading a sweep's output through a pipe gets its end when the sweep ends: the
    fork server (which exits after the launching process, slowly once it has imported the
    training path) writes to /dev/null; the workers get the real streams."""
    probe = ("import os, multiprocessing.forkserver as fs; from svmlab import launcher; "
             "launcher.start_fork_server(['json']); pid = fs._forkserver._forkserver_pid; "
             "print(os.readlink(f'/proc/{pid}/fd/1'), os.readlink(f'/proc/{pid}/fd/2'))")
    out = python_output(probe)
    assert out.split() == [os.devnull, os.devnull]


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(),
                    reason="no fork server on this platform")
def test_workers_are_forked_with_the_preloaded_objects_frozen():
    """The fork server freezes what it imported before it forks, so that the workers' garbage
    collections leave those objects (and the memory pages they share) alone."""
    probe = ("import gc, json; from svmlab import launcher; "
             "context = launcher.start_fork_server(['json']); "
             "pool = context.Pool(1); print(pool.apply(gc.get_freeze_count)); pool.close()")
    out = python_output(probe)
    assert int(out) > 0  # objects frozen; none without the freeze


def test_launching_a_sweep_imports_neither_mlflow_nor_the_solvers():
    """The launching process needs only the entry point; the jobs import the training path."""
    probe = ("import sys, svmlab.cli, svmlab.train, svmlab.sweep, svmlab.launcher; "
             "print(sorted(m for m in ('mlflow', 'sklearn', 'numba', 'matplotlib') "
             "if m in sys.modules))")
    out = python_output(probe)
    assert out.strip() == "[]"
