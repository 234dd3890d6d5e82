"""`svmlab runs list` and `runs show` on a store that `svmlab train` wrote; what train and a
sweep print after their runs (the UI's pages, the next step); the name of a sweep's parent run
and the kind of the experiments svmlab creates."""

import contextlib
import io
import re

import pytest
from mlflow import MlflowClient

from support.runs import copy_store, runs, train
from svmlab.app import cli
from svmlab.app.launch.sweep import sweep_name
from svmlab.tracking.store import EXPERIMENT_KIND


@pytest.fixture(scope="module")
def written(tmp_path_factory, store_template):
    """A store with a sweep of two solvers on breast_cancer and one FAILED run; what the sweep
    printed."""
    path = copy_store(store_template, tmp_path_factory.mktemp("runs") / "mlflow.db")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert train(path, "-m", "solver=liblinear,libsvm", "tracking.log_model=false") == 0
        with pytest.raises(SystemExit):
            train(path, "solver=nan_trace", "tracking.log_model=false")
    return path, printed.getvalue()


def svmlab(*argv: str) -> int:
    return cli.main(list(argv))


def table(out: str) -> dict[str, list[str]]:
    """The rows of `runs list` by run id (cells split on runs of spaces)."""
    lines = out.splitlines()
    assert lines[0].split() == [
        "run_id",
        "status",
        "name",
        "solver",
        "dataset",
        "test_accuracy",
        "fit_time_s",
        "n_iter",
        "rel_gap",
    ]
    return {line.split()[0]: line.split() for line in lines[1:]}


def test_runs_list_prints_the_runs_and_filters_them(written, capsys):
    store, _ = written
    uri = f"sqlite:///{store}"
    found = {r.info.run_name: r for r in runs(store)}
    libsvm = found["libsvm-breast_cancer-linear-seed0"]
    assert svmlab("runs", "list", "--tracking-uri", uri) == 0
    rows = table(capsys.readouterr().out)
    assert set(rows) == {r.info.run_id for r in found.values()}
    metrics = libsvm.data.metrics
    assert rows[libsvm.info.run_id] == [
        libsvm.info.run_id,
        "FINISHED",
        "libsvm-breast_cancer-linear-seed0",
        "libsvm",
        "breast_cancer",
        f"{metrics['test_accuracy']:.4g}",
        f"{metrics['fit_time_s']:.4g}",
        f"{metrics['n_iter']:.4g}",
        f"{metrics['rel_gap_hinge_l2_bias']:.4g}",
    ]

    assert (
        svmlab(
            "runs",
            "list",
            "--tracking-uri",
            uri,
            "--solver",
            "libsvm",
            "--dataset",
            "breast_cancer",
            "-e",
            "svmlab",
        )
        == 0
    )
    assert list(table(capsys.readouterr().out)) == [libsvm.info.run_id]
    assert svmlab("runs", "list", "--tracking-uri", uri, "--status", "failed") == 0
    (failed,) = table(capsys.readouterr().out).values()
    assert failed[1:4] == ["FAILED", "nan_trace-breast_cancer-linear-seed0", "nan_trace"]
    assert svmlab("runs", "list", "--tracking-uri", uri, "--last", "1") == 0
    assert list(table(capsys.readouterr().out)) == [failed[0]]  # the latest run
    assert svmlab("runs", "list", "--tracking-uri", uri, "--dataset", "a9a") == 0
    assert capsys.readouterr().out == "no runs\n"


def test_runs_list_refuses_an_unknown_experiment_and_a_bad_count(written, capsys):
    store, _ = written
    uri = f"sqlite:///{store}"
    assert svmlab("runs", "list", "--tracking-uri", uri, "-e", "nope") == 2
    assert capsys.readouterr().err == (
        f"svmlab runs list: error: unknown experiment(s) nope; the store {uri} has: Default, "
        f"svmlab\n"
    )
    assert svmlab("runs", "list", "--tracking-uri", uri, "--last", "0") == 2
    assert "--last must be a positive number of runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        svmlab("runs", "list", "--status", "done")
    assert "invalid choice: 'DONE'" in capsys.readouterr().err


def test_runs_show_prints_params_metrics_certificate_artifacts_and_the_ui_pages(written, capsys):
    store, _ = written
    uri = f"sqlite:///{store}"
    (run,) = [r for r in runs(store) if r.info.run_name == "liblinear-breast_cancer-linear-seed0"]
    run_id, experiment_id = run.info.run_id, run.info.experiment_id
    assert svmlab("runs", "show", run_id, "--tracking-uri", uri) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"run {run_id}  FINISHED  liblinear-breast_cancer-linear-seed0  "
        f"(experiment {experiment_id})\nparams:\n"
    )
    assert "  solver.C = 1.0\n" in out and "  dataset.name = breast_cancer\n" in out
    metrics = run.data.metrics
    assert f"  test_accuracy = {metrics['test_accuracy']:.6g}\n" in out
    assert "trace/" not in out.split("certified:")[0].split("metrics:")[1]  # final values only
    formulation = run.data.tags["svmlab.formulation"]
    assert (
        f"certified: relative duality gap {metrics[f'rel_gap_{formulation}']:.1e} of "
        f"{formulation} (primal {metrics[f'primal_{formulation}']:.6g}, dual bound "
        f"{metrics[f'dual_{formulation}']:.6g}); converged: "
        f"{run.data.tags['svmlab.stopping_rule']}\n"
    ) in out
    assert "artifacts:\n  config/\n  config/config.yaml\n" in out
    assert "  trace/trace.parquet\n" in out
    assert (
        f"this run:               http://127.0.0.1:5000/#/experiments/{experiment_id}/runs/"
        f"{run_id}?workflowType=machine_learning\n"
    ) in out
    assert f"mlflow ui --backend-store-uri {uri} --port 5000" in out


def test_runs_show_of_an_unknown_run_says_so(written, capsys):
    store, _ = written
    assert svmlab("runs", "show", "0" * 32, "--tracking-uri", f"sqlite:///{store}") == 2
    assert capsys.readouterr().err.startswith(
        f"svmlab runs show: error: no run {'0' * 32} in the tracking store sqlite:///{store}"
    )


def test_a_sweep_names_its_parent_run_by_its_overrides_and_says_what_comes_next(written):
    store, printed = written
    (parent,) = [r for r in runs(store) if r.data.tags.get("svmlab.role") == "sweep"]
    assert parent.info.run_name == "sweep solver=liblinear,libsvm"  # not where runs go
    uri = f"sqlite:///{store}"
    experiment_id = parent.info.experiment_id
    assert (
        f"runs in the MLflow UI:  http://127.0.0.1:5000/#/experiments/{experiment_id}/runs"
        f"?workflowType=machine_learning\n"
    ) in printed
    assert (
        "next: svmlab analyze -e svmlab  /  svmlab report -e svmlab  /  svmlab runs list "
        f"-e svmlab\n      (each with --tracking-uri {uri})\n"
    ) in printed


def test_a_sweeps_name_leaves_out_where_its_runs_go():
    assert (
        sweep_name(["solver=a,b", "dataset=x", "tracking.uri=sqlite:///m.db", "+paths.data_dir=/d"])
        == "sweep solver=a,b dataset=x"
    )
    assert sweep_name([]) == "sweep (the defaults)"
    assert len(sweep_name([f"seed={','.join(map(str, range(200)))}"])) == 250


def test_the_experiments_svmlab_creates_open_as_model_training_in_the_ui(written):
    store, _ = written
    client = MlflowClient(f"sqlite:///{store}")
    assert client.get_experiment_by_name("svmlab").tags == EXPERIMENT_KIND
    assert EXPERIMENT_KIND == {"mlflow.experimentKind": "custom_model_development"}


def test_one_training_run_prints_its_ui_page_and_the_next_step(store, capsys):
    assert train(store, "solver=liblinear", "tracking.log_model=false") == 0
    out = capsys.readouterr().out
    (run,) = runs(store)
    page = re.search(r"this run:\s+(\S+)", out)[1]
    assert page == (
        f"http://127.0.0.1:5000/#/experiments/{run.info.experiment_id}/runs/"
        f"{run.info.run_id}?workflowType=machine_learning"
    )
    assert "next: svmlab analyze -e svmlab  /  svmlab report -e svmlab" in out
