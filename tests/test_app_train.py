"""End-to-end training runs into a temporary SQLite store: what every run must log."""

import json
import signal
import time

import mlflow
import numpy as np
import pytest
from mlflow import MlflowClient

from support.runs import runs, train, train_process
from svmlab import data


@pytest.fixture(scope="module")
def libsvm_run(tmp_path_factory):
    """One real run: LIBSVM with an rbf kernel on the embedded default dataset."""
    store = tmp_path_factory.mktemp("store") / "mlflow.db"
    assert (
        train(
            store,
            "solver=libsvm",
            "kernel=rbf",
            "kernel.gamma=0.05",
            "solver.C=2",
            "seed=3",
            "tracking.log_figure=true",
        )
        == 0
    )
    (run,) = runs(store)
    return store, run


def test_run_finishes_with_the_identifying_tags(libsvm_run):
    _, run = libsvm_run
    tags = run.data.tags
    assert run.info.status == "FINISHED"
    assert (tags["solver"], tags["dataset"], tags["kernel"], tags["seed"]) == (
        "libsvm",
        "breast_cancer",
        "rbf",
        "3",
    )
    assert tags["svmlab.version"]
    assert "svmlab.sweep_dir" not in tags  # a single run is not part of a sweep


def test_params_are_the_flattened_resolved_config(libsvm_run):
    _, run = libsvm_run
    params = run.data.params
    assert params["solver._target_"] == "svmlab.solvers.baselines.Libsvm"
    assert float(params["solver.C"]) == 2.0
    assert params["kernel.name"] == "rbf" and float(params["kernel.gamma"]) == 0.05
    assert params["dataset.name"] == "breast_cancer"
    assert params["seed"] == "3"
    assert params["tracking.experiment"] == "svmlab"
    assert "paths.data_dir" in params and "tracking.log_model" in params


def test_final_metrics_and_objectives(libsvm_run):
    _, run = libsvm_run
    metrics = run.data.metrics
    for key in (
        "fit_time_s",
        "certificate_time_s",
        "predict_time_s",
        "train_accuracy",
        "test_accuracy",
        "n_iter",
        "n_support",
        "objective_hinge_l2",
        "objective_squared_hinge_l2",
    ):
        assert key in metrics, key
    assert 0.9 < metrics["test_accuracy"] <= 1.0
    assert 0.5 <= metrics["test_majority_rate"] < metrics["test_accuracy"]  # not a constant
    assert metrics["n_support"] >= 1
    assert "objective_hinge_l1" not in metrics  # no l1 norm for an rbf expansion
    assert metrics["trace/objective_hinge_l2"] == pytest.approx(metrics["objective_hinge_l2"])


def test_the_runs_table_has_the_numbers_of_the_datasets_profile(libsvm_run):
    from svmlab.tracking import queries

    store, run = libsvm_run
    (row,) = queries.search_runs(f"sqlite:///{store}", [run.info.experiment_id]).to_dict("records")
    (logged,) = run.inputs.dataset_inputs
    profile = json.loads(logged.dataset.profile)
    assert row["inputs.n_train"] == profile["n_train"] > 0
    assert row["inputs.n_test"] == profile["n_test"] > 0


def test_artifacts(libsvm_run):
    store, run = libsvm_run
    client = MlflowClient(f"sqlite:///{store}")
    paths = {a.path for a in client.list_artifacts(run.info.run_id)}
    paths |= {
        a.path for d in ("config", "trace") for a in client.list_artifacts(run.info.run_id, d)
    }
    assert {
        "config/config.yaml",
        "config/overrides.yaml",
        "trace/trace.parquet",
        "trace/convergence.png",
    } <= paths
    overrides = mlflow.artifacts.load_text(f"{run.info.artifact_uri}/config/overrides.yaml")
    assert "kernel=rbf" in overrides and "solver.C=2" in overrides
    config = mlflow.artifacts.load_text(f"{run.info.artifact_uri}/config/config.yaml")
    assert "gamma: 0.05" in config


def test_dataset_input_has_name_digest_and_shape(libsvm_run):
    _, run = libsvm_run
    dataset = data.load("breast_cancer", seed=3)
    (logged,) = run.inputs.dataset_inputs
    assert logged.dataset.name == "breast_cancer"
    assert logged.dataset.digest == dataset.digest[:32]
    profile = json.loads(logged.dataset.profile)
    assert profile["sha256"] == dataset.digest
    assert (profile["n_train"], profile["n_test"], profile["n_features"]) == (
        dataset.n_train,
        dataset.n_test,
        dataset.n_features,
    )


def test_model_reloads_and_predicts_what_the_run_measured(libsvm_run):
    store, run = libsvm_run
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    uri = f"runs:/{run.info.run_id}/model"
    info = mlflow.models.get_model_info(uri)
    assert info.signature is not None
    assert tuple(info.signature.inputs.to_dict()[0]["tensor-spec"]["shape"]) == (-1, 30)
    dataset = data.load("breast_cancer", seed=3)
    pyfunc_pred = np.asarray(mlflow.pyfunc.load_model(uri).predict(dataset.X_test))
    sklearn_pred = mlflow.sklearn.load_model(uri).predict(dataset.X_test)
    np.testing.assert_array_equal(pyfunc_pred, sklearn_pred)
    assert np.mean(pyfunc_pred == dataset.y_test) == run.data.metrics["test_accuracy"]


def test_long_trace_is_an_artifact_and_a_log_spaced_history(store):
    """The whole trace is the artifact; the metric history keeps at most 250 log-spaced rows,
    the first and the last among them."""
    from svmlab.tracking.queries import load_trace

    assert (
        train(store, "solver=long_trace", "+solver.n_rows=10000", "tracking.log_model=false") == 0
    )
    (run,) = runs(store)
    client = MlflowClient(f"sqlite:///{store}")
    trace = load_trace(f"sqlite:///{store}", run.info.run_id)
    np.testing.assert_array_equal(trace["iteration"], np.arange(10_000))
    np.testing.assert_allclose(trace["objective_hinge_l2"], 1.0 / (np.arange(10_000) + 1))
    history = client.get_metric_history(run.info.run_id, "trace/objective_hinge_l2")
    steps = np.sort([m.step for m in history])
    assert len(steps) <= 250 and steps[0] == 0 and steps[-1] == 9_999
    assert len(np.unique(steps)) == len(steps)
    gaps = np.diff(steps)
    assert gaps[0] == 1 and gaps[-1] > 10  # dense at the start, sparse at the end (log-spaced)
    for m in history:
        assert m.value == pytest.approx(1.0 / (m.step + 1))
    assert len(client.get_metric_history(run.info.run_id, "trace/time_s")) == len(steps)
    assert run.data.metrics["trace/objective_hinge_l2"] == pytest.approx(1e-4)
    assert run.data.tags["svmlab.converged"] == "false"


def test_multirun_jobs_are_tagged_with_sweep_and_job_number(store, tmp_path):
    assert train(store, "-m", "solver=liblinear", "seed=0,1", "tracking.log_model=false") == 0
    found = [r for r in runs(store) if r.data.tags.get("svmlab.role") != "sweep"]  # the jobs
    assert [r.info.status for r in found] == ["FINISHED", "FINISHED"]
    assert sorted(r.data.tags["svmlab.job_num"] for r in found) == ["0", "1"]
    assert {r.data.tags["svmlab.sweep_dir"] for r in found} == {str(tmp_path / "multirun")}
    assert sorted(r.data.tags["seed"] for r in found) == ["0", "1"]


def test_nan_in_the_trace_fails_the_run_with_the_reason(store, capsys):
    with pytest.raises(SystemExit):
        train(store, "solver=nan_trace")
    (run,) = runs(store)
    assert run.info.status == "FAILED"
    assert "NaN" in run.data.tags["svmlab.error"]
    assert "NaN" in capsys.readouterr().err


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, "KILLED"), (signal.SIGINT, "KILLED")])
def test_interrupted_run_ends_killed_not_running(store, tmp_path, sig, status):
    started = tmp_path / "started"
    proc = train_process(store, "solver=slow", f"+solver.started_file={started}")
    deadline = time.monotonic() + 300
    while not started.exists():  # wait until the run is training
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("the run never started training")
        time.sleep(0.2)
    proc.send_signal(sig)
    assert proc.wait(timeout=60) != 0
    (run,) = runs(store)
    assert run.info.status == status
    assert "svmlab.error" in run.data.tags


@pytest.mark.usefixtures("isolated_data_env")
def test_malformed_dataset_file_is_refused_naming_file_and_line_before_any_run(
    store, tmp_path, capsys
):
    folder = tmp_path / "data" / "heart_scale"
    folder.mkdir(parents=True)
    (folder / "heart_scale").write_text("+1 1:0.5 2:-0.25\n-1 1:0.1 2:abc\n")
    with pytest.raises(SystemExit) as exit_info:
        train(
            store,
            "solver=liblinear",
            "dataset=heart_scale",
            "dataset.verify=false",
            f"paths.data_dir={tmp_path / 'data'}",
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "heart_scale" in error and "line 2" in error
    assert runs(store) == [] and not (tmp_path / "outputs").exists()


@pytest.mark.usefixtures("isolated_data_env")
def test_a_dataset_file_that_is_not_the_official_one_is_refused_unless_accepted(
    store, tmp_path, capsys
):
    path = tmp_path / "data" / "heart_scale" / "heart_scale"
    path.parent.mkdir(parents=True)
    path.write_text("+1 1:0.5 2:-0.25\n-1 1:0.1 2:0.3\n" * 4)
    args = ("solver=liblinear", "dataset=heart_scale", f"paths.data_dir={tmp_path / 'data'}")
    with pytest.raises(SystemExit):
        train(store, *args)
    error = capsys.readouterr().err
    assert f"{path} differs from the official" in error
    assert "set the dataset parameter verify=false" in error
    assert runs(store) == []  # refused before any run
    assert train(store, *args, "dataset.verify=false") == 0
    (accepted,) = runs(store)
    assert accepted.info.status == "FINISHED"
    assert accepted.data.tags["svmlab.data_unverified"].startswith(
        f"{path} differs from the official heart_scale: expected sha256 "
    )


@pytest.mark.parametrize("folder_from", ["paths.data_dir", "SVMLAB_DATA_DIR"])
@pytest.mark.usefixtures("isolated_data_env")
def test_a_data_folder_that_does_not_exist_is_named_first_and_creates_nothing(
    store, tmp_path, capsys, libsvm_site, monkeypatch, folder_from
):
    monkeypatch.setenv("SVMLAB_LIBSVM_URL", libsvm_site.url)
    missing = tmp_path / "no-such-folder"
    given = [f"paths.data_dir={missing}"] if folder_from == "paths.data_dir" else []
    if not given:
        monkeypatch.setenv("SVMLAB_DATA_DIR", str(missing))
    with pytest.raises(SystemExit) as exit_info:
        train(store, "solver=liblinear", "dataset=heart_scale", *given)
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"svmlab: error: the data folder {missing} (")
    assert "does not exist" in line and (folder_from != "SVMLAB_DATA_DIR" or folder_from in line)
    assert libsvm_site.requests == {}  # nothing was downloaded in its place
    assert runs(store) == [] and not (tmp_path / "outputs").exists()
    assert not (tmp_path / "default-cache").exists()
