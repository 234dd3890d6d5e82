"""What a newcomer meets first: the default demo and what it certified, the compile notice,
a long fit's sign of life, the project run's experiment, the commit of an installed copy."""

import threading

import numba
from mlflow import MlflowClient
from numba.core import event

import svmlab
from support.configs import composed
from support.runs import runs, train
from svmlab import lifecycle
from svmlab.recording import config as recorded_config
from svmlab.recording.warm_up import COMPILING, SayCompiling
from svmlab.tracking.store import ui_line


def test_the_default_demo_is_certified_and_says_so(tmp_path, capsys):
    store = tmp_path / "mlflow.db"
    assert train(store, "tracking.log_model=false") == 0
    out = capsys.readouterr().out
    (run,) = runs(store)
    tags, metrics = run.data.tags, run.data.metrics
    assert tags["solver"] == "alm_gap" and tags["svmlab.converged"] == "true"
    assert metrics["rel_gap_hinge_l2_bias"] <= 1e-3  # the problem LIBSVM solves
    assert (
        f"certified: relative duality gap {metrics['rel_gap_hinge_l2_bias']:.1e} of hinge_l2_bias"
    ) in out
    assert "; converged: certified rel_gap_hinge_l2_bias <= tol_gap=0.001" in out


def test_a_libsvm_fit_stopped_by_its_iteration_cap_says_it_did_not_converge(tmp_path, capsys):
    store = tmp_path / "mlflow.db"
    assert train(store, "solver=libsvm", "solver.max_iter=3", "tracking.log_model=false") == 0
    (run,) = runs(store)
    assert run.data.tags["svmlab.converged"] == "false"
    assert run.data.params["solver.max_iter"] == "3"
    assert "; NOT converged: LIBSVM's maximal KKT violation <= tol=0.001, before max_iter=3" in (
        capsys.readouterr().out
    )


def test_libsvm_has_an_iteration_cap_by_default():
    assert composed("solver=libsvm").solver.max_iter == 10_000_000


def test_the_compile_notice_is_printed_once_when_numba_compiles_and_not_when_it_has(capsys):
    @numba.njit(cache=False)
    def twice(x):
        return 2 * x

    with event.install_listener("numba:compile", SayCompiling()):
        twice(1.0)
        twice(2)  # a second compilation (another type): no second line
    with event.install_listener("numba:compile", SayCompiling()):
        twice(3.0)  # compiled already: nothing to say
    assert capsys.readouterr().out == COMPILING + "\n"


def test_a_long_fit_shows_it_is_alive():
    """The fit waits until the first sign of life: a state, not a time."""
    alive, seen = threading.Event(), []

    def beat(seconds):
        seen.append(seconds)
        alive.set()

    assert (
        lifecycle.run_interruptibly(lambda: alive.wait(60) and "done", alive=beat, alive_s=0.05)
        == "done"
    )
    assert seen and seen[0] >= 0.05


def test_the_ui_line_names_the_runs_page_and_the_one_worker_fallback():
    lines = ui_line("sqlite:///x/mlflow.db", "3", "abc").splitlines()
    assert lines[0].endswith(
        "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning"
    )
    assert lines[1].endswith(
        "http://127.0.0.1:5000/#/experiments/3/runs/abc?workflowType=machine_learning"
    )
    assert lines[2].endswith(
        "mlflow ui --backend-store-uri sqlite:///x/mlflow.db --port 5000  "
        "(on a loaded machine: add --workers 1)"
    )
    assert ui_line("http://10.0.0.7:5001/", "3") == (
        "runs in the MLflow UI:  "
        "http://10.0.0.7:5001/#/experiments/3/runs?workflowType=machine_learning"
    )


def test_under_mlflow_run_without_an_experiment_the_run_goes_to_svmlab(tmp_path, monkeypatch):
    """`mlflow run .` opens the project's run in MLflow's Default experiment: the training run
    is filed in `svmlab`, and the project's run points to it."""
    store = tmp_path / "mlflow.db"
    client = MlflowClient(f"sqlite:///{store}")
    project = client.create_run("0").info.run_id
    monkeypatch.setenv("MLFLOW_RUN_ID", project)
    assert train(store, "solver=liblinear", "tracking.log_model=false") == 0
    (run,) = runs(store)
    assert run.info.run_id != project and run.info.status == "FINISHED"
    pointer = client.get_run(project).data.tags
    assert pointer["svmlab.run_id"] == run.info.run_id
    assert "experiment 'svmlab'" in pointer["mlflow.note.content"]


def test_an_installed_copy_names_the_commit_it_was_built_from(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "svmlab"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "COMMIT").write_text("0123abc\n")
    monkeypatch.setattr(svmlab, "__file__", str(package / "__init__.py"))
    recorded_config.git_commit.cache_clear()
    try:
        assert recorded_config.git_commit() == "0123abc"  # no checkout there: the build's stamp
    finally:
        recorded_config.git_commit.cache_clear()
