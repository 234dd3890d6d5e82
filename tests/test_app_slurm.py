"""Sweeps on a real SLURM cluster (tests/cluster/slurm.sh: one node on this machine) into a real
`svmlab server` on PostgreSQL: the jobs of a sweep as one job array, a job cancelled with
`scancel` and the sweep resumed, the whole array cancelled, a sweep stopped (SIGTERM, as Ctrl-C)
cancelling its jobs, a run whose SLURM job ended reaped from any machine, a workflow's sweep,
`svmlab tune` workers as the tasks of an array, and a tune trial whose job ended trained again.

Skipped where SLURM's commands are missing or no node is up; .ci/run installs Debian's packages
and starts the cluster. The sweeps use the launcher preset of docs/sweeps.md
(tests/support/conf/hydra/launcher/cluster.yaml), as the recipe there runs them.
"""

import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import psycopg
import pytest
import yaml
from mlflow import MlflowClient

from support.runs import SUPPORT_CONF, child_env
from support.servers import postgres_bin, postgres_cluster, tracking_server, train_command
from support.waiting import wait_for
from svmlab.app import cli
from svmlab.lifecycle import (
    HEARTBEAT_TAG,
    HOST_TAG,
    PID_STARTED_TAG,
    PID_TAG,
    SLURM_JOB_TAG,
    SLURM_LIVE_STATES,
    iso_time,
    slurm_job_state,
)
from svmlab.tuning.study import RETRY_ATTR, recover, storage_url

pytestmark = pytest.mark.slurm
SWEEP_S = 900  # a sweep of the cluster's jobs ends within this (a safety net)
LAUNCHER = ("-m", "hydra/launcher=cluster", "tracking.log_model=false")
TINY_WORKFLOW = Path(__file__).parent / "support" / "workflows" / "tiny.yaml"


@pytest.fixture(scope="module")
def cluster() -> str:
    """The name of an idle or busy node of the local SLURM cluster; skips without one."""
    if not (shutil.which("sbatch") and shutil.which("sinfo")):
        pytest.skip(
            "SLURM is not installed (.ci/run installs Debian's slurm packages and "
            "starts tests/cluster/slurm.sh)"
        )
    nodes = subprocess.run(
        ["sinfo", "--noheader", "--format=%n %t"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    up = [
        line.split()[0]
        for line in nodes.stdout.splitlines()
        if line.split()[1].rstrip("*~#") in ("idle", "mix", "alloc")
    ]
    if nodes.returncode != 0 or not up:
        pytest.skip(
            f"no SLURM node is up (tests/cluster/slurm.sh start): "
            f"{(nodes.stderr or nodes.stdout).strip() or 'sinfo lists none'}"
        )
    return up[0]


@pytest.fixture(scope="module")
def database(cluster, tmp_path_factory) -> str:
    """The URI of the database of a throwaway PostgreSQL cluster."""
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs Debian's postgresql package)")
    with postgres_cluster() as uri:
        yield uri


@pytest.fixture(scope="module")
def server(database, tmp_path_factory) -> str:
    """The URL of a `svmlab server` on that database."""
    with tracking_server(database, tmp_path_factory.mktemp("slurm-server") / "artifacts") as url:
        yield url


def sweep_runs(url: str, experiment: str, role: str = "sweep") -> tuple[list, list]:
    """The experiment's runs of ``role`` (sweep parents) and its runs of no role, oldest
    first."""
    client = MlflowClient(url)
    found = client.search_runs(
        [client.get_experiment_by_name(experiment).experiment_id],
        order_by=["attributes.start_time ASC"],
    )
    return (
        [r for r in found if r.data.tags.get("svmlab.role") == role],
        [r for r in found if "svmlab.role" not in r.data.tags],
    )


def one_array(runs: list) -> dict[str, str]:
    """Job number -> SLURM job of each run, which must all be tasks of one array."""
    jobs = {r.data.tags.get("svmlab.job_num"): r.data.tags[SLURM_JOB_TAG] for r in runs}
    assert len({job.split("_")[0] for job in jobs.values()}) == 1, jobs
    return jobs


def ended_states(jobs) -> set[str] | None:
    """SLURM's states of the jobs once every one of them has ended, else None."""
    states = {slurm_job_state(job) for job in jobs}
    return None if states & (SLURM_LIVE_STATES | {None}) else states


def sweep(url: str, folder, *overrides: str, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        train_command(url, folder, *LAUNCHER, *overrides),
        env=child_env(),
        cwd=folder,
        text=True,
        **popen,
    )


@pytest.mark.slow
def test_a_sweep_runs_as_one_job_array_into_a_postgresql_server(server, tmp_path):
    n = 4  # tasks of one array, each its job number, under one parent
    seeds = "seed=" + ",".join(map(str, range(n)))
    proc = sweep(
        server,
        tmp_path,
        "solver=liblinear",
        seeds,
        "tracking.experiment=array",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out = proc.communicate(timeout=SWEEP_S)[0]
    assert proc.returncode == 0, out
    assert f"{n} jobs: {n} finished, 0 failed" in out

    (parent,), children = sweep_runs(server, "array")
    assert parent.info.status == "FINISHED" and parent.data.metrics["jobs_finished"] == n
    assert parent.data.params["sweep.launcher"] == "SlurmLauncher"
    assert {r.info.status for r in children} == {"FINISHED"}
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert sorted(int(r.data.tags["seed"]) for r in children) == list(range(n))
    jobs = one_array(children)
    array = jobs["0"].split("_")[0]
    assert jobs == {str(i): f"{array}_{i}" for i in range(n)}  # task i runs job i
    # a task ends just after its result is written
    assert wait_for(lambda: ended_states(jobs.values()), "every task to end") == {"COMPLETED"}


@pytest.mark.slow
def test_a_cancelled_job_ends_killed_and_the_resumed_sweep_trains_each_config_once(
    server, tmp_path
):
    started, stop = tmp_path / "started", tmp_path / "stop"
    started.mkdir()
    jobs = (
        "solver=slow",
        "seed=0,1",
        f"+solver.stop_file={stop}",
        f"+solver.started_file={started}/" + "${seed}",
        "tracking.experiment=cancel",
    )
    out = open(tmp_path / "out.txt", "w")
    proc = sweep(server, tmp_path, *jobs, stdout=out, stderr=subprocess.STDOUT)
    wait_for((started / "1").exists, "job #1 to start its fit")
    client = MlflowClient(server)
    # job #0 may not have tagged its run yet
    (run,) = [r for r in sweep_runs(server, "cancel")[1] if r.data.tags.get("seed") == "1"]
    job = run.data.tags[SLURM_JOB_TAG]
    assert slurm_job_state(job) == "RUNNING"
    subprocess.run(["scancel", job], check=True, timeout=60)
    wait_for(lambda: client.get_run(run.info.run_id).info.status == "KILLED", "its run to end")
    stop.touch()  # job #0 finishes
    assert proc.wait(timeout=SWEEP_S) == 1, (tmp_path / "out.txt").read_text()
    # squeue may still show the job COMPLETING while the node cleans up after it
    wait_for(lambda: slurm_job_state(job) == "CANCELLED", "the job to end")

    killed = client.get_run(run.info.run_id)
    assert "SIGTERM" in killed.data.tags["svmlab.error"]
    (parent,), children = sweep_runs(server, "cancel")
    assert parent.info.status == "FAILED"
    metrics = parent.data.metrics
    assert (metrics["jobs_finished"], metrics["jobs_killed"], metrics["jobs_failed"]) == (1, 1, 0)
    table = client.download_artifacts(parent.info.run_id, "jobs.tsv", str(tmp_path))
    (line,) = [row for row in open(table).read().splitlines() if row.startswith("1\t")]
    assert f"KILLED\t\t0.000\t{run.info.run_id}\tits SLURM job {job} ended CANCELLED" in line
    assert (
        f"killed: #1 slow-breast_cancer-linear-seed1: its SLURM job {job}"
        in (tmp_path / "out.txt").read_text()
    )

    proc = sweep(
        server, tmp_path, *jobs, "+resume=true", stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    resumed = proc.communicate(timeout=SWEEP_S)[0]
    assert proc.returncode == 0, resumed
    assert "2 jobs: 1 finished, 0 failed, 1 skipped" in resumed
    _, children = sweep_runs(server, "cancel")
    finished = sorted(r.data.tags["seed"] for r in children if r.info.status == "FINISHED")
    assert finished == ["0", "1"]  # one per config
    assert [r.info.status for r in children if r.data.tags["seed"] == "1"] == ["KILLED", "FINISHED"]
    assert not list(
        MlflowClient(server).search_runs(
            [killed.info.experiment_id], "attributes.status = 'RUNNING'"
        )
    )


def two_slow_jobs(server: str, folder: Path, experiment: str) -> tuple[subprocess.Popen, dict]:
    """A sweep of two slow fits, once both train: its process and its jobs (one_array)."""
    started = folder / "started"
    started.mkdir()
    proc = sweep(
        server,
        folder,
        "solver=slow",
        "seed=0,1",
        f"+solver.started_file={started}/" + "${seed}",
        f"tracking.experiment={experiment}",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    wait_for(lambda: {p.name for p in started.iterdir()} == {"0", "1"}, "both fits to start")
    return proc, one_array(sweep_runs(server, experiment)[1])


@pytest.mark.slow
def test_cancelling_the_whole_array_ends_every_job_killed(server, tmp_path):
    proc, jobs = two_slow_jobs(server, tmp_path, "whole")
    subprocess.run(["scancel", jobs["0"].split("_")[0]], check=True, timeout=60)
    out = proc.communicate(timeout=SWEEP_S)[0]
    assert proc.returncode == 1, out
    assert "2 jobs: 0 finished, 0 failed, 0 skipped (finished before), 2 killed" in out
    (parent,), children = sweep_runs(server, "whole")
    assert parent.info.status == "FAILED" and parent.data.metrics["jobs_killed"] == 2
    assert {r.info.status for r in children} == {"KILLED"}
    assert all(r.data.tags["svmlab.error"] for r in children)


@pytest.mark.slow
def test_stopping_the_sweep_cancels_its_jobs(server, tmp_path):
    proc, jobs = two_slow_jobs(server, tmp_path, "stopped")
    proc.send_signal(signal.SIGTERM)  # as Ctrl-C (a test worker's children may ignore SIGINT)
    out = proc.communicate(timeout=SWEEP_S)[0]
    assert proc.returncode != 0, out
    assert wait_for(lambda: ended_states(jobs.values()), "the jobs to end") == {"CANCELLED"}
    (parent,), _ = sweep_runs(server, "stopped")
    assert parent.info.status == "KILLED"
    wait_for(
        lambda: {r.info.status for r in sweep_runs(server, "stopped")[1]} == {"KILLED"},
        "the jobs' runs to end KILLED",
    )


def test_a_run_whose_slurm_job_ended_is_reaped_from_any_machine(cluster, store, tmp_path, capsys):
    """A run of a job on another node, alive by its heartbeat: only SLURM can tell that its
    job has ended, and `svmlab runs reap` asks it; the launcher has no part in it."""
    submitted = subprocess.run(
        ["sbatch", "--parsable", f"--output={tmp_path}/job.out", "--wrap", "sleep 600"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    job = submitted.stdout.strip().split(";")[0]
    uri = f"sqlite:///{store}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("elsewhere")
    now = iso_time(time.time())
    run_id = client.create_run(
        experiment,
        tags={
            HOST_TAG: "node-elsewhere",
            PID_TAG: "4242",
            PID_STARTED_TAG: now,
            HEARTBEAT_TAG: now,
            SLURM_JOB_TAG: job,
        },
    ).info.run_id

    def reap() -> str:
        assert cli.main(["runs", "reap", "--tracking-uri", uri]) == 0
        return capsys.readouterr().out

    try:
        wait_for(lambda: slurm_job_state(job) == "RUNNING", "the job to run")
        assert "reaped 0 run(s)" in reap()  # its job runs: the run may be alive
    finally:
        subprocess.run(["scancel", job], check=True, timeout=60)
    wait_for(lambda: slurm_job_state(job) == "CANCELLED", "the job to end")
    assert f"run {run_id} KILLED: its SLURM job {job} ended CANCELLED" in reap()
    run = client.get_run(run_id)
    assert run.info.status == "KILLED"
    assert run.data.tags["svmlab.error"] == f"ended by svmlab: its SLURM job {job} ended CANCELLED"


@pytest.mark.slow
def test_a_workflow_runs_its_sweep_on_the_cluster(server, tmp_path):
    workflow = tmp_path / TINY_WORKFLOW.name  # without its report: the sweep is what is tested
    workflow.write_text(
        yaml.safe_dump(
            {k: v for k, v in yaml.safe_load(TINY_WORKFLOW.read_text()).items() if k != "report"}
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "svmlab.app.cli",
            "workflow",
            str(workflow),
            "--launcher",
            "submitit_slurm",
            "--tracking-uri",
            server,
            f"hydra.searchpath=[file://{SUPPORT_CONF}]",
            f"hydra.sweep.dir={tmp_path}/multirun",
            "seed=0",
        ],  # one seed: four jobs
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=SWEEP_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (outer,), _ = sweep_runs(server, "workflow-tiny-quick", "workflow")
    (parent,), children = sweep_runs(server, "workflow-tiny-quick")
    assert outer.info.status == "FINISHED" and parent.info.status == "FINISHED"
    assert parent.data.tags["mlflow.parentRunId"] == outer.info.run_id
    assert parent.data.params["sweep.launcher"] == "SlurmLauncher"
    assert len(children) == 4 and {r.info.status for r in children} == {"FINISHED"}
    assert len(one_array(children)) == 4


@pytest.mark.slow
def test_tune_workers_run_as_slurm_jobs_sharing_one_study(database, server, tmp_path):
    """Two `svmlab tune` processes as the tasks of one array, one Optuna study on the
    PostgreSQL beside the tracking server's database: each holds a trial, then both end."""
    with psycopg.connect(database, autocommit=True) as db:
        db.execute("CREATE DATABASE optuna")
    storage = database.rsplit("/", 1)[0] + "/optuna"
    stop = tmp_path / "stop"
    command = [
        sys.executable,
        "-m",
        "svmlab.app.cli",
        "tune",
        "--storage",
        storage,
        "--study",
        "shared",
        "--trials",
        "2",
        "--cv",
        "2",
        "--no-refit",
        "--pruner",
        "none",
        "solver=slow",
        f"+solver.stop_file={stop}",
        "solver.C=interval(0.5, 2.0)",
        f"tracking.uri={server}",
        "tracking.experiment=tune",
        "tracking.log_model=false",
        f"hydra.searchpath=[file://{SUPPORT_CONF}]",
    ]
    submitted = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--array=0-1",
            f"--output={tmp_path}/tune-%A_%a.out",
            "--wrap",
            shlex.join(command),
        ],
        env=child_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    array = submitted.stdout.strip().split(";")[0]
    tasks = {f"{array}_0", f"{array}_1"}
    client = MlflowClient(server)

    def trials(status: str) -> set[str]:
        found = client.get_experiment_by_name("tune")
        runs = (
            client.search_runs([found.experiment_id], f"attributes.status = '{status}'")
            if found
            else []
        )
        return {r.data.tags.get(SLURM_JOB_TAG) for r in runs} - {None}

    def both_hold() -> bool:
        if {slurm_job_state(t) for t in tasks} - SLURM_LIVE_STATES - {None}:  # one has ended
            pytest.fail(
                "a task ended before both held a trial: "
                + "\n".join(p.read_text() for p in tmp_path.glob("tune-*.out"))
            )
        return trials("RUNNING") >= tasks

    try:
        wait_for(both_hold, "each task to hold a trial", SWEEP_S)
    finally:
        stop.touch()
    ended = wait_for(lambda: ended_states(tasks), "both tasks to end", SWEEP_S)
    assert ended == {"COMPLETED"}, [p.read_text() for p in tmp_path.glob("tune-*.out")]
    study = optuna.load_study(study_name="shared", storage=storage_url(storage))
    finished = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert 2 <= len(finished) <= 3  # a task mid-trial when the count was reached finishes it
    (parent,), _ = sweep_runs(server, "tune", "study")
    trial_runs, _ = sweep_runs(server, "tune", "trial")
    assert parent.info.status == "FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in trial_runs} == {parent.info.run_id}
    assert trials("FINISHED") == tasks and not trials("RUNNING")


def test_a_trial_whose_slurm_job_ended_is_failed_and_queued_again(cluster, tmp_path):
    """A RUNNING trial of another host, whose SLURM job has ended: only SLURM's word shows that
    its process is gone, and the next invocation's recovery acts on it."""
    submitted = subprocess.run(
        ["sbatch", "--parsable", f"--output={tmp_path}/true.out", "--wrap", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    job = submitted.stdout.strip().split(";")[0]
    wait_for(lambda: ended_states([job]), "the job to end", SWEEP_S)
    study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path}/optuna.db")
    trial = study.ask({"solver.C": optuna.distributions.FloatDistribution(0.5, 2.0)})
    for key, value in {
        HOST_TAG: "another-host",
        PID_TAG: "1",
        PID_STARTED_TAG: iso_time(0.0),
        SLURM_JOB_TAG: job,
    }.items():
        trial.set_user_attr(key, value)
    recover(study, None)
    first, again = study.get_trials(deepcopy=False)
    assert first.state == optuna.trial.TrialState.FAIL
    assert again.state == optuna.trial.TrialState.WAITING  # queued with the failed trial's values
    assert again.system_attrs["fixed_params"] == first.params
    assert again.user_attrs[RETRY_ATTR] == first.number
