"""`svmlab analyze` and `svmlab report` on runs that `svmlab train` writes to a temporary store:
selection, exclusion of unfinished runs, the logged analysis run, and both notebooks."""

import argparse
import json
import re
from pathlib import Path

import mlflow
import nbformat
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from support.runs import copy_store, runs, train
from svmlab.analysis import friedman, measurements, notebooks, stage
from svmlab.app.analyze import add_parser
from svmlab.app.cli import run_command
from svmlab.errors import SvmlabError

SOLVERS = ("liblinear", "libsvm", "long_trace")


@pytest.fixture(scope="module")
def store(tmp_path_factory, store_template):
    """Three solvers on breast_cancer (seeds 0 and 1) and synthetic_gaussian (seed 0), all
    finished, and one FAILED run."""
    path = copy_store(store_template, tmp_path_factory.mktemp("runs") / "mlflow.db")
    common = ("-m", f"solver={','.join(SOLVERS)}", "tracking.log_model=false")
    assert train(path, *common, "dataset=breast_cancer", "seed=0,1") == 0
    assert train(path, *common, "dataset=synthetic_gaussian", "dataset.n=200", "seed=0") == 0
    with pytest.raises(SystemExit):
        train(path, "solver=nan_trace", "tracking.log_model=false")
    return path


def svmlab(*argv: str) -> int:
    """`svmlab analyze|report ...` through the registered subcommands."""
    parser = argparse.ArgumentParser(prog="svmlab")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return run_command(args)


def analysis_runs(store) -> list:
    client = MlflowClient(f"sqlite:///{store}")
    experiment = client.get_experiment_by_name("svmlab-analysis")
    return (
        []
        if experiment is None
        else client.search_runs([experiment.experiment_id], order_by=["attributes.start_time DESC"])
    )


def training_runs(store) -> list:
    return [r for r in runs(store) if r.data.tags.get("svmlab.role") != "sweep"]


def test_selection_reads_finished_runs_and_counts_the_others(store):
    selection = measurements.from_mlflow(
        ["svmlab"], measures=["test_accuracy", "fit_time_s"], tracking_uri=f"sqlite:///{store}"
    )
    finished = [r for r in training_runs(store) if r.info.status == "FINISHED"]
    assert selection.excluded == {"FAILED": 1}
    assert sorted(selection.run_ids) == sorted(r.info.run_id for r in finished)
    by_id = selection.long.set_index("run_id")
    for r in finished:
        row = by_id.loc[r.info.run_id]
        assert (row["block"], row["treatment"], row["repetition"]) == (
            r.data.tags["dataset"],
            r.data.tags["solver"],
            r.data.tags["seed"],
        )
        assert row["test_accuracy"] == r.data.metrics["test_accuracy"]


def test_combined_keys_and_filters(store):
    uri = f"sqlite:///{store}"
    selection = measurements.from_mlflow(
        ["svmlab"],
        "tags.solver != 'long_trace'",
        measures=["test_accuracy"],
        blocks=["dataset", "seed"],
        treatments=["solver", "params.solver.C"],
        tracking_uri=uri,
    )
    assert sorted(selection.long["treatment"].unique()) == ["liblinear / 1.0", "libsvm / 1.0"]
    assert sorted(selection.long["block"].unique()) == [
        f"breast_cancer{measurements.JOIN}0",
        f"breast_cancer{measurements.JOIN}1",
        f"synthetic_gaussian{measurements.JOIN}0",
    ]
    with pytest.raises(SvmlabError, match="no run has the param or tag 'variant'"):
        measurements.from_mlflow(["svmlab"], measures=[], treatments=["variant"], tracking_uri=uri)
    with pytest.raises(SvmlabError, match="no run logged the metric 'auc'; logged: .*fit_time_s"):
        measurements.from_mlflow(["svmlab"], measures=["auc"], tracking_uri=uri)


def test_analyze_logs_a_linked_analysis_run(store, tmp_path, capsys):
    uri = f"sqlite:///{store}"
    before = len(analysis_runs(store))
    assert (
        svmlab(
            "analyze",
            "--tracking-uri",
            uri,
            "-m",
            "test_accuracy:higher:0.01",
            "-m",
            "fit_time_s",
            "--control",
            "liblinear",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "excluded runs: 1 FAILED" in out
    assert "== test_accuracy (higher is better): 2 blocks, 3 treatments" in out
    assert "against the control liblinear (Holm-adjusted Bonferroni-Dunn" in out
    assert re.search(r"  \w+ vs \w+: p ranks [\d.e-]+, p Wilcoxon [\d.e-]+ \[0.01:", out)
    latest = analysis_runs(store)
    assert len(latest) == before + 1
    analysis = latest[0]
    assert analysis.info.run_id in out and analysis.info.status == "FINISHED"
    page = re.search(r"report.html: (\S+)", out)[1]
    assert Path(page).is_file() and analysis.info.run_id in page
    finished = {r.info.run_id for r in training_runs(store) if r.info.status == "FINISHED"}
    assert set(analysis.data.tags["svmlab.analysis.runs.0"].split(",")) == finished
    assert analysis.data.tags["svmlab.analysis.excluded"] == "1 FAILED"

    folder = tmp_path / "artifacts"
    MlflowClient(uri).download_artifacts(analysis.info.run_id, "", str(folder))
    summary = json.loads(
        (folder / "summary.json").read_text(),
        parse_constant=lambda name: pytest.fail(f"{name} in summary.json"),
    )
    assert summary["measures"]["fit_time_s"]["pairwise"][0]["ci_coverage"] == 0.5  # 2 blocks
    # mean ranks recomputed from the training runs' own metrics, averaged over the seeds
    long = pd.DataFrame(
        [
            {
                "block": r.data.tags["dataset"],
                "solver": r.data.tags["solver"],
                "t": r.data.metrics["fit_time_s"],
            }
            for r in training_runs(store)
            if r.info.run_id in finished
        ]
    )
    values = long.pivot_table(index="block", columns="solver", values="t", aggfunc="mean")
    expected = friedman.block_ranks(values, higher_is_better=False).mean()
    for solver, rank in summary["measures"]["fit_time_s"]["mean_ranks"].items():
        assert rank == pytest.approx(expected[solver])
    assert analysis.data.metrics["fit_time_s.mean_rank.libsvm"] == pytest.approx(expected["libsvm"])
    for name in ("cd_diagram", "rank_boxplot", "per_block"):
        assert (folder / "test_accuracy" / f"{name}.png").stat().st_size > 1000
    curves = sorted(p.name for p in (folder / "convergence").iterdir())
    assert curves == ["breast_cancer.png", "synthetic_gaussian.png"]
    assert pd.read_csv(folder / "input.csv")["run_id"].isin(finished).all()
    assert "<table" in (folder / "report.html").read_text()


def test_time_to_gap_and_its_performance_profile_on_the_analysis_run(store, tmp_path, capsys):
    """These solvers certify their final point only, so the time to a gap of 1e-2 is their fit
    time when the final gap is within it (said in a warning)."""
    uri = f"sqlite:///{store}"
    assert (
        svmlab(
            "analyze",
            "--tracking-uri",
            uri,
            "--filter",
            "tags.solver != 'long_trace'",
            "-m",
            "time_to_gap_1e-2,iters_to_gap_1e-2",
            "--run-name",
            "profiles",
            "--bayes-samples",
            "500",
        )
        == 0
    )
    captured = capsys.readouterr()
    assert (
        "reached a target only by their final certificate (none in the trace, or a better "
        "final point); their time_to_gap_1e-2, iters_to_gap_1e-2"
    ) in captured.err
    assert "performance profile over 2 blocks" in captured.out
    (analysis,) = [r for r in analysis_runs(store) if r.info.run_name == "profiles"]
    folder = tmp_path / "artifacts"
    MlflowClient(uri).download_artifacts(analysis.info.run_id, "", str(folder))
    used = pd.read_csv(folder / "input.csv").set_index("run_id")
    for r in training_runs(store):
        if r.info.run_id in used.index:
            gap = r.data.metrics[f"rel_gap_{r.data.tags['svmlab.formulation']}"]
            expected = r.data.metrics["fit_time_s"] if gap <= 1e-2 else float("inf")
            assert used.loc[r.info.run_id, "time_to_gap_1e-2"] == expected
    for name in ("performance_profile", "data_profile"):
        assert (folder / "time_to_gap_1e-2" / f"{name}.png").stat().st_size > 5000


def test_the_global_tracking_uri_is_left_as_it_was(store):
    before = mlflow.get_tracking_uri()
    measurements.from_mlflow(["svmlab"], measures=[], tracking_uri=f"sqlite:///{store}")
    assert mlflow.get_tracking_uri() == before


def test_user_errors_exit_2_with_a_message(store, capsys):
    uri = f"sqlite:///{store}"
    before = len(analysis_runs(store))
    assert svmlab("analyze", "--tracking-uri", uri, "-e", "nosuch") == 2
    assert (
        "svmlab analyze: error: unknown experiment(s) nosuch; the store" in capsys.readouterr().err
    )
    assert svmlab("analyze", "--tracking-uri", uri, "--filter", "params.x ~ 1") == 2
    assert "svmlab analyze: error: bad filter" in capsys.readouterr().err
    assert svmlab("analyze", "--tracking-uri", uri, "-m", "auc") == 2
    assert "auc:higher or auc:lower" in capsys.readouterr().err
    assert svmlab("analyze", "--tracking-uri", uri, "--alpha", "0.05,high") == 2
    assert "--alpha takes numbers in (0, 1)" in capsys.readouterr().err
    assert svmlab("analyze", "--tracking-uri", uri, "--control", "libsvn") == 2
    assert (
        "unknown control 'libsvn'; treatments: liblinear, libsvm, long_trace. Did you mean "
        "'libsvm'?"
    ) in capsys.readouterr().err
    assert svmlab("analyze", "--tracking-uri", uri, "--filter", "tags.solver = 'libsvm'") == 2
    assert "need at least 2 treatments" in capsys.readouterr().err
    assert len(analysis_runs(store)) == before  # nothing half-written


def test_missing_cells_are_dropped_or_fail_when_strict(new_store, tmp_path, capsys):
    csv = tmp_path / "results.csv"
    pd.DataFrame(
        {
            "block": ["x", "x", "y", "z", "z", "w", "w"],
            "treatment": ["A", "B", "A", "A", "B", "A", "B"],
            "acc": [0.9, 0.8, 0.7, 0.6, 0.5, 0.8, 0.7],
            "t": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
        }
    ).to_csv(csv, index=False)
    uri = f"sqlite:///{new_store(tmp_path / 'a.db')}"
    assert (
        svmlab("analyze", "--csv", str(csv), "-m", "acc:higher,t:lower", "--tracking-uri", uri) == 0
    )
    captured = capsys.readouterr()
    # once, though both measures drop the block
    assert captured.err.count("dropping 1 block(s) with missing treatments: y: B") == 1
    assert "3 blocks, 2 treatments" in captured.out
    assert (
        svmlab("analyze", "--csv", str(csv), "-m", "acc:higher", "--tracking-uri", uri, "--strict")
        == 2
    )
    assert "missing cells (block: treatments without a value): y: B" in capsys.readouterr().err
    assert svmlab("analyze", "--csv", str(csv), "-m", "auc:higher", "--tracking-uri", uri) == 2
    assert "missing column(s) auc" in capsys.readouterr().err


def outputs(path) -> list[dict]:
    """Every output of every code cell of an executed notebook."""
    book = nbformat.read(path, as_version=4)
    return [o for cell in book.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


@pytest.mark.slow
def test_report_executes_the_significance_notebook_on_the_analysis_run(store, tmp_path, capfd):
    uri = f"sqlite:///{store}"
    assert (
        svmlab(
            "report",
            "--tracking-uri",
            uri,
            "-m",
            "test_accuracy:higher:0.01",
            "--alpha",
            "0.05",
            "--run-name",
            "report",
        )
        == 0
    )
    printed, err = capfd.readouterr()
    assert "IPKernelApp" not in err  # the kernel's own log stays off the console
    html = re.search(r"notebook/significance_report.html: (\S+)", printed)[1]
    assert "<html" in Path(html).read_text()[:2000]  # the page the command names is there
    (analysis,) = [r for r in analysis_runs(store) if r.info.run_name == "report"]
    folder = tmp_path / "artifacts"
    MlflowClient(uri).download_artifacts(analysis.info.run_id, "notebook", str(folder))
    executed = folder / "notebook" / "significance_report.ipynb"
    found = outputs(executed)
    assert not [o for o in found if o["output_type"] == "error"]
    text = json.dumps(found)
    assert "Iman-Davenport F (tie-corrected chi2)" in text  # the omnibus table
    assert "share equivalent" in text  # the Bayesian table
    assert sum("image/png" in o.get("data", {}) for o in found) >= 5
    injected = nbformat.read(executed, as_version=4).cells[2].source
    assert "alphas = [0.05]" in injected and "test_accuracy:higher:0.01" in injected
    assert "<html" in (folder / "notebook" / "significance_report.html").read_text()[:2000]


def test_convergence_notebook_draws_the_chosen_runs(store, tmp_path):
    chosen = [
        r.info.run_id
        for r in training_runs(store)
        if r.info.status == "FINISHED" and r.data.tags["dataset"] == "breast_cancer"
    ]
    executed, html = notebooks.execute(
        notebooks.CONVERGENCE,
        tmp_path,
        {
            "tracking_uri": f"sqlite:///{store}",
            "run_ids": chosen,
            "objective": "objective_hinge_l2",
        },
    )
    found = outputs(executed)
    assert not [o for o in found if o["output_type"] == "error"]
    text = json.dumps(found)
    assert "objective: objective_hinge_l2; blocks: ['breast_cancer']" in text
    assert sum("image/png" in o.get("data", {}) for o in found) == 1  # one block
    assert html.stat().st_size > 10000


def test_traces_are_the_logged_histories(store):
    uri = f"sqlite:///{store}"
    selection = measurements.from_mlflow(
        ["svmlab"], "tags.solver = 'long_trace' and tags.seed = '0'", measures=[], tracking_uri=uri
    )
    name, curves = stage.traces(selection, tracking_uri=uri)
    assert name.startswith("objective_")
    client = MlflowClient(uri)
    for frame in curves.values():
        for run_id, one in frame.groupby("run_id"):
            history = client.get_metric_history(run_id, f"trace/{name}")
            np.testing.assert_array_equal(
                one["value"], [p.value for p in sorted(history, key=lambda p: p.step)]
            )
            assert one["time_s"].is_monotonic_increasing


def test_notebook_failure_names_the_notebook(tmp_path):
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "broken.ipynb"
    nbformat.write(book, path)
    with pytest.raises(SvmlabError, match="broken.ipynb failed in cell 1: ZeroDivisionError"):
        notebooks.execute(path, tmp_path / "out", {})


def test_under_mlflow_run_the_analysis_goes_into_the_project_run(
    new_store, tmp_path, monkeypatch, capsys
):
    uri = f"sqlite:///{new_store(tmp_path / 'project.db')}"
    client = MlflowClient(uri)
    project_run = client.create_run(client.create_experiment("project")).info.run_id
    monkeypatch.setenv("MLFLOW_RUN_ID", project_run)
    csv = tmp_path / "results.csv"
    pd.DataFrame(
        {
            "block": list("xxyyzz"),
            "treatment": list("ABABAB"),
            "acc": [0.9, 0.8, 0.7, 0.6, 0.5, 0.55],
        }
    ).to_csv(csv, index=False)
    assert svmlab("analyze", "--csv", str(csv), "-m", "acc:higher", "--tracking-uri", uri) == 0
    assert project_run in capsys.readouterr().out
    assert client.get_experiment_by_name("svmlab-analysis") is None
    logged = client.get_run(project_run)
    assert logged.info.status == "FINISHED"  # the launcher then records the exit status too
    assert logged.data.tags["svmlab.analysis.source"] == f"csv:{csv}"
    assert "summary.json" in {f.path for f in client.list_artifacts(project_run)}
