"""What a run records, compared with the record kept in tests/data/recorded_runs.json: three
seeded `svmlab train` runs and a one-trial `svmlab tune` study (its parent, trial and refit)
into a new SQLite store, every param, tag, metric (value and history), dataset input and
artifact (name, and the content of text and Parquet artifacts), normalised.

Regenerate the record with ``SVMLAB_WRITE_RECORD=1`` only when a change of what runs record is
meant; the test then fails once, to say that it wrote the file.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from support.runs import SUPPORT_CONF, train
from svmlab.app import cli

RECORD = Path(__file__).parent / "data" / "recorded_runs.json"

TRAINS = [
    ("solver=liblinear", "seed=1"),
    ("solver=libsvm", "kernel=rbf", "kernel.gamma=0.05", "solver.C=2", "seed=3"),
    ("solver=alm_gap", "seed=2", "tracking.log_model=false"),
]
STUDY = (
    "--trials",
    "1",
    "--sampler",
    "grid",
    "--cv",
    "2",
    "solver=liblinear",
    "solver.C=choice(0.5)",
    "tracking.log_model=false",
)

#: tags left out, each for its reason
VARYING_TAGS = {
    "svmlab.host": "the machine",
    "svmlab.pid": "the process",
    "svmlab.pid_started": "the process's start time",
    "svmlab.heartbeat": "a time",
    "svmlab.git_commit": "the commit being tested (and whether its tree is dirty)",
    "svmlab.slurm_job": "the SLURM job the test may run in",
    "mlflow.user": "the user",
    "mlflow.source.name": "how pytest was started",
    "mlflow.source.type": "how pytest was started",
    "mlflow.source.git.commit": "the commit being tested",
    "mlflow.log-model.history": "times and ids of the logged model",
}
#: metrics whose names are kept but whose values are left out: wall or solver seconds
VARYING_METRIC = re.compile(r"(^|/|_)time_s$")
#: artifacts whose names are kept but whose content is left out, each for its reason
VARYING_ARTIFACTS = {
    "trials.csv": "Optuna's start and end times and durations of each trial",
    "model/": "the model's files carry times, ids and the environment's versions",
}
#: Parquet columns left out: solver seconds
VARYING_COLUMNS = {"time_s"}
DIGITS = 6  # significant digits of a float: the last bits may differ between machines


def rounded(value: float):
    value = float(value)
    return value if not math.isfinite(value) else float(f"{value:.{DIGITS}g}")


def run_record(client: MlflowClient, run, replace) -> dict:
    """One run, every varying part left out (above) and ``replace`` applied to its texts."""
    run_id = run.info.run_id
    metrics, histories = {}, {}
    for key in sorted(run.data.metrics):
        varying = bool(VARYING_METRIC.search(key))
        history = client.get_metric_history(run_id, key)
        histories[key] = sorted([m.step, None if varying else rounded(m.value)] for m in history)
        metrics[key] = None if varying else rounded(run.data.metrics[key])
    tags = {k: replace(v) for k, v in sorted(run.data.tags.items()) if k not in VARYING_TAGS}
    inputs = [
        {
            "name": d.dataset.name,
            "digest": d.dataset.digest,
            "profile": d.dataset.profile,
            "context": [t.value for t in d.tags],
        }
        for d in run.inputs.dataset_inputs
    ]
    return {
        "status": run.info.status,
        "params": {k: replace(v) for k, v in sorted(run.data.params.items())},
        "tags": tags,
        "metrics": metrics,
        "histories": histories,
        "inputs": inputs,
        "artifacts": artifacts(client, run_id, replace),
        "models": sorted(
            m.name
            for m in client.search_logged_models(
                [run.info.experiment_id], f"source_run_id = '{run_id}'"
            )
        ),
    }


def artifacts(client: MlflowClient, run_id: str, replace, path: str | None = None) -> dict:
    """Every artifact by path: the content of a text or Parquet file, else None."""
    found = {}
    for entry in client.list_artifacts(run_id, path):
        if entry.is_dir:
            found |= artifacts(client, run_id, replace, entry.path)
            continue
        varying = any(entry.path.startswith(p) for p in VARYING_ARTIFACTS)
        found[entry.path] = None if varying else content(client, run_id, entry.path, replace)
    return found


def content(client: MlflowClient, run_id: str, path: str, replace):
    suffix = Path(path).suffix
    if suffix not in (".yaml", ".txt", ".csv", ".json", ".parquet"):
        return None
    local = client.download_artifacts(run_id, path)
    if suffix != ".parquet":
        return replace(Path(local).read_text())
    frame = pd.read_parquet(local)
    return {
        column: [rounded(v) if isinstance(v, float) else v for v in frame[column].tolist()]
        for column in frame.columns
        if column not in VARYING_COLUMNS
    }


def record_of(folder: Path) -> dict:
    """Every run of the store in ``folder`` by run name; run ids and the folder's path replaced
    by names (``<run:NAME>``, ``<tmp>``), and the test support's config folder by ``<support>``
    (it is where this checkout is)."""
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("svmlab")
    found = client.search_runs([experiment.experiment_id])
    names = {r.info.run_id: r.info.run_name for r in found}

    def replace(text: str) -> str:
        text = str(text).replace(str(folder), "<tmp>").replace(str(SUPPORT_CONF), "<support>")
        for run_id, name in names.items():
            text = text.replace(run_id, f"<run:{name}>")
        return text

    return {
        r.info.run_name: run_record(client, r, replace)
        for r in sorted(found, key=lambda r: r.info.run_name)
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, store_template) -> dict:
    from support.runs import copy_store

    folder = tmp_path_factory.mktemp("recorded")
    store = copy_store(store_template, folder / "mlflow.db")
    for overrides in TRAINS:
        assert train(store, *overrides) == 0
    assert (
        cli.main(
            [
                "tune",
                "--storage",
                f"sqlite:///{folder / 'optuna.db'}",
                "--study",
                "s",
                *STUDY,
                f"tracking.uri=sqlite:///{store}",
                f"hydra.searchpath=[file://{SUPPORT_CONF}]",
            ]
        )
        == 0
    )
    return json.loads(json.dumps(record_of(folder)))  # as the file holds it


@pytest.mark.slow
def test_runs_record_the_same_names_and_values_as_the_kept_record(recorded):
    if os.environ.get("SVMLAB_WRITE_RECORD"):
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        pytest.fail(f"wrote {RECORD}: check it in, and unset SVMLAB_WRITE_RECORD")
    kept = json.loads(RECORD.read_text())
    assert sorted(recorded) == sorted(kept)
    for name in kept:
        for part in kept[name]:
            assert recorded[name][part] == kept[name][part], (name, part)


# -- what a run records, without a store ---------------------------------------------------------


def test_a_fits_record_is_built_without_a_store():
    """A fit's record (plain values): the trace as a table and its histories, the final metrics
    at the last iteration, the fit's tags; a later fold's under names of its own, at step k."""
    from svmlab.data import load
    from svmlab.recording.results import fit_record
    from svmlab.solvers.baselines import Liblinear
    from svmlab.vocabulary import TRACE_ARTIFACT

    dataset = load("breast_cancer", seed=0)
    estimator = Liblinear(C=1.0).fit(dataset.X_train, dataset.y_train)
    record, metrics = fit_record(estimator, dataset, compile_s=0.5, start_ms=1000)
    assert list(record.tables) == [TRACE_ARTIFACT] and not record.params
    assert record.tags["svmlab.converged"] in ("true", "false")
    final = {p.key: p for p in record.metrics if not p.key.startswith("trace/")}
    assert set(final) == set(metrics) and final["test_accuracy"].value == metrics["test_accuracy"]
    assert {p.step for p in final.values()} == {estimator.n_iter_}
    assert metrics["compile_time_s"] == estimator.compile_time_s_ + 0.5
    history = [p for p in record.metrics if p.key.startswith("trace/")]
    assert history and min(p.timestamp for p in history) >= 1000
    fold, _ = fit_record(estimator, dataset, fold=2)
    assert list(fold.tables) == ["trace/fold2.parquet"]
    assert {p.step for p in fold.metrics} == {2}  # no histories for a later fold


def test_the_config_record_is_built_from_plain_values():
    from svmlab.recording.config import DIGEST_TAG, config_record, run_name

    tree = {
        "seed": 3,
        "solver": {"C": 2.0, "tol": "1e-3"},
        "kernel": {"name": "linear"},
        "dataset": {"name": "breast_cancer", "n": 5, "y": "yes"},
        "tracking": {"uri": "sqlite:///a.db", "experiment": "svmlab"},
    }
    record = config_record(tree, ["seed=3"], "liblinear", sweep_dir="/s", job_num=1)
    assert record.params["solver.C"] == 2.0 and record.params["dataset.n"] == 5
    assert record.tags["svmlab.job_num"] == 1 and len(record.tags[DIGEST_TAG]) == 64
    assert run_name(record) == "liblinear-breast_cancer-linear-seed3"
    moved = tree | {"tracking": {"uri": "sqlite:///b.db", "experiment": "svmlab"}}
    assert config_record(moved, [], "liblinear").tags[DIGEST_TAG] == record.tags[DIGEST_TAG]
    # as OmegaConf writes it: what YAML 1.1 would read as a boolean or a number is quoted
    text = record.texts["config/config.yaml"]
    assert "  'n': 5\n" in text and "  'y': 'yes'\n" in text and "  tol: '1e-3'\n" in text
    assert record.texts["config/overrides.yaml"] == "- seed=3\n"
