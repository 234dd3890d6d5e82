"""Workflows: every shipped file loads and its sweep composes at both scales; malformed files
and unknown names fail clearly; claims are judged as stated; a workflow runs end to end into a
temporary store, and one interrupted or missing a run is completed by running it again."""

import math
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from mlflow import MlflowClient

from support.configs import composed
from support.runs import SUPPORT_CONF, TESTS_DIR
from svmlab.app import cli
from svmlab.app.config.schema import build_estimator
from svmlab.app.workflow import experiment_name, outer_tags, sweep_arguments
from svmlab.workflows import claims, spec

pytestmark = pytest.mark.filterwarnings(
    "ignore:\\s*'hydra/launcher/joblib' is validated:UserWarning"
)

TINY = Path(__file__).parent / "support" / "workflows" / "tiny.yaml"
SHIPPED = [(name, scale) for name in spec.names() for scale in spec.SCALES]  # each has all three


def jobs(arguments: list[str]) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper makes them of the preset and arguments."""
    fixed = [a for a in arguments if "," not in a.split("=", 1)[1] and "range(" not in a]
    params = composed(*fixed, hydra=True).hydra.sweeper.params
    parsed = OverridesParser.create().parse_overrides(
        [f"{k}={v}" for k, v in params.items()] + arguments
    )
    (batch,) = BasicSweeper.split_arguments(parsed, None)
    return batch


@pytest.mark.parametrize("name,scale", SHIPPED, ids=[f"{n}-{s}" for n, s in SHIPPED])
def test_every_workflow_loads_and_its_sweep_composes(name, scale):
    workflow = spec.load(name)
    batch = jobs(sweep_arguments(workflow, scale, "sqlite:///mlflow.db", "joblib", 2))
    for job in (batch[0], batch[-1]):
        cfg = composed(*job)
        assert cfg.tracking.experiment == experiment_name(workflow, scale)
        build_estimator(cfg)
    if scale == "paper":  # the runs of every testable claim are among the paper-scale jobs
        swept = {
            o.split("=", 1)[1]
            for job in batch
            for o in job
            if o.split("=")[0].lstrip("+") in ("solver", "dataset", "bsca_problem")
        }
        for claim in workflow.claims:
            for side in (claim.value, claim.relative_to or {}):
                for key in set(side) & {"solver", "dataset"}:
                    named = side[key] if isinstance(side[key], list) else [side[key]]
                    assert set(named) & swept, (claim.claim, named)


def swept(batch: list[list[str]], keys=("solver", "dataset", "bsca_problem")) -> set[str]:
    """The solvers, datasets and problems of a sweep's jobs; a seeded split of the training file
    (``w8a_split``, where the official test file is missing) counts as its dataset."""
    return {
        o.split("=", 1)[1].removesuffix("_split")
        for job in batch
        for o in job
        if o.split("=")[0].lstrip("+") in keys
    }


@pytest.mark.parametrize("name,scale", SHIPPED, ids=[f"{n}-{s}" for n, s in SHIPPED])
def test_each_scale_states_the_number_of_runs_its_sweep_launches(name, scale):
    workflow = spec.load(name)
    launched = jobs(sweep_arguments(workflow, scale, "sqlite:///x.db"))
    assert workflow.budgets[scale].runs == len(launched)


@pytest.mark.parametrize("name", spec.names())
def test_the_medium_scale_keeps_the_papers_solvers_and_datasets_or_says_why_and_its_size(name):
    workflow = spec.load(name)
    medium, paper = (
        jobs(sweep_arguments(workflow, scale, "sqlite:///x.db")) for scale in ("medium", "paper")
    )
    description = yaml.safe_load(workflow.path.read_text())["scales"]["medium"]["description"]
    left_out = swept(paper) - swept(medium)  # only where the description says why
    # no more runs per seed than the paper scale: more seeds only where a claim needs 6 blocks
    per_seed = [len(batch) / len(distinct(batch, "seed")) for batch in (medium, paper)]
    assert swept(medium) <= swept(paper) and per_seed[0] <= per_seed[1]
    assert all(f"{d} is left out" in description for d in left_out), left_out
    assert f"({len(medium)} runs" in description


def test_a_scale_the_workflow_does_not_define_is_refused(capsys):
    assert cli.main(["workflow", str(TINY), "--scale", "medium"]) == 2
    assert "workflow tiny has no medium scale; its scales: quick, paper" in capsys.readouterr().err


def test_overrides_given_replace_the_workflows_own_for_the_same_key():
    workflow = spec.load("fw_paper")
    arguments = sweep_arguments(
        workflow, "quick", "sqlite:///x.db", "basic", None, ["seed=3", "hydra.sweep.dir=/tmp/sweep"]
    )
    assert arguments == [
        "+experiment=fw_paper",
        "tracking.log_model=false",
        "dataset=w1a,w3a,a1a",
        "tracking.experiment=workflow-fw_paper-quick",
        "tracking.uri=sqlite:///x.db",
        "+resume=true",
        "seed=3",
        "hydra.sweep.dir=/tmp/sweep",
    ]


@pytest.mark.parametrize("name", spec.names())
def test_every_bound_is_justified_from_the_papers_wording(name):
    decided = [c for c in spec.load(name).claims if c.untestable is None]
    if name != "shootout":  # svmlab's own statements, not a paper's
        assert decided and all(c.why for c in decided), [c.claim for c in decided if not c.why]


PAPERS = Path(__file__).resolve().parents[1] / spec.PAPERS_DIR
PAPER_WORKFLOWS = [n for n in spec.names() if n != "shootout"]  # shootout: svmlab's own


@pytest.mark.parametrize("name", spec.names())
def test_every_untestable_claim_names_what_this_machine_lacks_data_or_software(name):
    for c in spec.load(name).claims:
        if c.untestable is not None:
            assert c.untestable_kind in ("data", "software") and c.untestable.strip(), c.claim


@pytest.mark.parametrize("name", PAPER_WORKFLOWS)
def test_every_paper_claim_quotes_a_sentence_of_its_paper(name):
    if not PAPERS.is_dir():
        pytest.skip(f"the papers' texts are not at {PAPERS}")
    workflow = spec.load(name)
    assert workflow.paper_file, f"{name} names no paper_file"
    text = spec.normalised((PAPERS / workflow.paper_file).read_text())
    tally = [c for c in workflow.claims if c.kind == "paper"]
    assert tally and all(c.quote for c in tally), [c.claim for c in tally if not c.quote]
    missing = [c.claim for c in tally if spec.normalised(c.quote) not in text]
    assert not missing, missing


def test_quotes_are_compared_across_line_breaks_and_hyphenation_only():
    text = spec.normalised("the speed-up is mono-\n  tonically\n\nincreasing, “as shown”")
    assert text == "the speed-up is monotonically increasing, “as shown”"
    assert spec.normalised("monotonically  increasing") in text
    assert spec.normalised("Monotonically increasing") not in text


SPEED = ("fit_time_s", "time_to_obj_")


@pytest.mark.parametrize("name", spec.names())
def test_every_speed_claim_of_a_paper_has_its_equal_precision_companion_after_it(name):
    found = spec.load(name).claims
    for i, c in enumerate(found):
        if c.kind == "paper" and c.untestable is None and c.measure.startswith(SPEED):
            companion = found[i + 1]
            assert companion.companion_of == c.claim and companion.kind == "svmlab", c.claim
            assert companion.measure.startswith(("time_to_gap_", "time_to_acc_")), c.claim
            assert (companion.value, companion.relative_to, companion.blocks) == (
                c.value,
                c.relative_to,
                c.blocks,
            )


def test_the_shipped_workflows_are_listed_with_their_papers(capfd):
    assert set(spec.names()) >= {
        "nesvm_adult",
        "fw_paper",
        "l1_newton_paper",
        "alm_paper",
        "bsca_budget",
        "shootout",
    }
    assert cli.main(["workflow", "list"]) == 0
    out = capfd.readouterr().out
    for name in spec.names():
        assert f"{name}: {spec.load(name).paper}" in out
    # per scale: the runs and the wall time measured, or that it was not
    assert (
        "    medium  1536 runs, 17 min 29 s (2 workers, 2026-11-29, load 1-2; the machine "
        "otherwise quiet)\n"
    ) in out
    assert "    paper   225 runs, wall time not measured\n" in out


def test_an_unknown_workflow_names_the_available_ones(capsys):
    assert cli.main(["workflow", "fw_papr"]) == 2
    err = capsys.readouterr().err
    assert "unknown workflow 'fw_papr'; available: " + ", ".join(spec.names()) in err
    assert err.startswith("svmlab workflow: error: ") and "Did you mean 'fw_paper'" in err


def tiny_data() -> dict:
    return yaml.safe_load(TINY.read_text())


@pytest.mark.parametrize(
    "change,message",
    [
        ({"sweeps": {}}, "unknown key(s) sweeps; allowed: paper, description, sweep"),
        ({"claims": []}, "claims must be a non-empty list"),
        ({"scales": {"quick": {}}}, "scales: missing key(s) paper"),
        (
            {"sweep": {"preset": "tiny", "overrides": ["seed"]}},
            "'seed' is not KEY=VALUE; quote a list of values",
        ),
        (
            {"report": {"notebook": "nope"}},
            "unknown notebook 'nope'; available: convergence, significance_report",
        ),
        ({"analysis": {"measures": ["accuracy"]}}, "analysis.measures"),
        ({"analysis": {"measures": ["fit_time_s"], "hypotheses": ["a<<b"]}}, "bad hypothesis"),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "value": {"solver": "a"},
                        "decide": {"about": 1},
                    }
                ]
            },
            "decide: one of tolerance, relative_tolerance, below, above with a number",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "value": {"solver": "a"},
                        "decide": {"tolerance": 1},
                    }
                ]
            },
            "compares with the paper's number; give it as paper: <number>",
        ),
        (
            {
                "claims": [
                    {"claim": "x", "source": "y", "value": {"solver": "a"}, "decide": {"below": 1}}
                ]
            },
            "missing measure",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "m",
                        "value": "libsvm",
                        "decide": {"below": 1},
                    }
                ]
            },
            "value: a mapping of tags or params",
        ),
        (
            {"claims": [{"claim": "x", "source": "y", "paper": "fast", "untestable": "no"}]},
            "paper: the paper's number; got 'fast' (words go in paper_text)",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "value": {"solver": "a"},
                        "decide": {"below": 1},
                        "why": 1,
                    }
                ]
            },
            "claims[0].why: a non-empty string; got 1",
        ),
        (
            {"claims": [{"claim": "x", "source": "y", "kind": "theirs", "untestable": "no"}]},
            "claims[0].kind: 'theirs'; allowed: paper, svmlab",
        ),
        (
            {"claims": [{"claim": "x", "source": "y", "untestable": "not in this sweep"}]},
            "claims[0].untestable: a mapping {kind: data|software, why: ...}",
        ),
        (
            {
                "claims": [
                    {"claim": "x", "source": "y", "untestable": {"kind": "sweep", "why": "w"}}
                ]
            },
            "claims[0].untestable.kind: 'sweep'; allowed: data, software",
        ),
        (
            {"claims": [{"claim": "x", "source": "y", "untestable": {"kind": "data"}}]},
            "claims[0].untestable: missing key(s) why",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "quote": " ",
                        "untestable": {"kind": "data", "why": "w"},
                    }
                ]
            },
            "claims[0].quote: a non-empty string",
        ),
        ({"paper_file": ""}, "paper_file: a non-empty string"),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "kind": "svmlab",
                        "value": {"solver": "a"},
                        "decide": {"below": 1},
                        "companion": {"measure": "time_to_gap_1e-2", "why": "w"},
                    }
                ]
            },
            "claims[0].companion: only a testable paper claim has a companion",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "value": {"solver": "a"},
                        "decide": {"below": 1},
                        "companion": {"measure": "time_to_gap_2", "why": "w"},
                    }
                ]
            },
            "claims[0].companion.measure: measure 'time_to_gap_2': the tolerance",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "value": {"solver": "a"},
                        "decide": {"below": 1},
                        "companion": {"measure": "time_to_gap_1e-2"},
                    }
                ]
            },
            "claims[0].companion: missing key(s) why",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "grid": "lam",
                        "value": {"solver": "a"},
                        "decide": {"below": 1},
                    }
                ]
            },
            "claims[0].grid: a list of strings",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "blocks": [],
                        "value": {"solver": "a"},
                        "decide": {"below": 1},
                    }
                ]
            },
            "claims[0].blocks: the keys whose values make a block",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "paper": 1,
                        "growth_with": "n_train",
                        "value": {"solver": "a"},
                        "relative_to": {"solver": "b"},
                        "decide": {"tolerance": 1},
                    }
                ]
            },
            "growth_with decides on a slope: use decide below or above",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "sensitivity_to": "solver.C",
                        "value": {"solver": "a"},
                        "decide": {"below": 0},
                    }
                ]
            },
            "sensitivity_to fits the comparison of two sides; give relative_to",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "sensitivity_to": "solver.C",
                        "blocks": ["dataset", "solver.C"],
                        "value": {"solver": "a"},
                        "relative_to": {"solver": "b"},
                        "decide": {"below": 0},
                    }
                ]
            },
            "sensitivity_to solver.C varies inside a block; take it out of blocks",
        ),
        (
            {
                "claims": [
                    {
                        "claim": "x",
                        "source": "y",
                        "measure": "fit_time_s",
                        "sensitivity_to": "solver.C",
                        "growth_with": "n_train",
                        "value": {"solver": "a"},
                        "relative_to": {"solver": "b"},
                        "decide": {"below": 0},
                    }
                ]
            },
            "growth_with and sensitivity_to exclude each other",
        ),
        (
            {"scales": {"quick": {"runs": 0}, "paper": {}}},
            "scales.quick.runs: the number of runs of the scale's sweep, a positive integer; got 0",
        ),
        (
            {"scales": {"quick": {"wall_time": {"seconds": 60}}, "paper": {}}},
            "scales.quick.wall_time: missing key(s) workers, date, load",
        ),
        (
            {
                "scales": {
                    "quick": {"wall_time": {"seconds": -1, "workers": 2, "date": "d", "load": "2"}},
                    "paper": {},
                }
            },
            "wall_time: seconds a positive number and workers a positive integer; got -1, 2",
        ),
    ],
)
def test_a_malformed_workflow_says_what_is_wrong_and_what_is_allowed(change, message):
    with pytest.raises(spec.WorkflowError) as error:
        spec.parse(tiny_data() | change, Path("bad.yaml"))
    assert message in str(error.value) and str(error.value).startswith("bad.yaml")


# -- end to end ---------------------------------------------------------------------------------


def workflow_args(store: Path, path: Path = TINY) -> list[str]:
    return [
        "workflow",
        str(path),
        "--launcher",
        "basic",
        "--tracking-uri",
        f"sqlite:///{store}",
        f"hydra.searchpath=[file://{SUPPORT_CONF}]",
        f"hydra.sweep.dir={store.parent}/multirun",
    ]


def every_run(store: Path) -> list:
    client = MlflowClient(f"sqlite:///{store}")
    (experiment,) = [e for e in client.search_experiments() if e.name.startswith("workflow-")]
    return client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])


def training_runs(found: list) -> list:
    return [r for r in found if "svmlab.role" not in r.data.tags]


def assert_one_finished_run_per_config(found: list, expected: int) -> None:
    finished = Counter(
        r.data.tags["svmlab.config_sha256"]
        for r in training_runs(found)
        if r.info.status == "FINISHED"
    )
    assert len(finished) == expected and set(finished.values()) == {1}


@pytest.mark.slow
def test_a_workflow_runs_end_to_end_and_running_it_again_completes_only_what_is_missing(
    store, tmp_path, capfd
):
    assert cli.main(workflow_args(store)) == 0
    out = capfd.readouterr().out
    found = every_run(store)
    roles = {r.data.tags.get("svmlab.role"): r for r in found}
    outer = roles["workflow"]
    for page in (
        f"report: {roles['analysis'].info.artifact_uri}/report.html",
        f"claims: {outer.info.artifact_uri}/claims.md",
    ):
        assert page.removeprefix("file://").replace("file://", "") in out
    assert outer.info.status == "FINISHED" and outer.data.tags["svmlab.workflow"] == "tiny"
    assert outer.data.tags["svmlab.workflow.scale"] == "quick"
    for role in ("sweep", "analysis", "report"):
        assert roles[role].info.status == "FINISHED"
        assert roles[role].data.tags["mlflow.parentRunId"] == outer.info.run_id
    assert_one_finished_run_per_config(found, 8)
    assert outer.data.metrics["claims_inconclusive"] == 1  # 4 blocks: 87.5 % at most
    assert outer.data.metrics["claims_not_reproduced"] == 1  # LIBSVM's 96.5 %, not 99.9 %
    assert outer.data.metrics["claims_not_testable_here"] == 2

    artifacts = {
        a.path for a in MlflowClient(f"sqlite:///{store}").list_artifacts(outer.info.run_id)
    }
    assert {"claims.md", "claims.html", "claims.csv", "figures"} <= artifacts
    table = pd.read_csv(
        mlflow.artifacts.download_artifacts(
            f"{outer.info.artifact_uri}/claims.csv", dst_path=str(tmp_path)
        )
    )
    assert list(table.columns) == [*claims.COLUMNS, "kind", "beside"]
    assert list(table["verdict"]) == [
        claims.INCONCLUSIVE,
        claims.NOT_REPRODUCED,
        claims.UNTESTABLE,
        claims.UNTESTABLE,
    ]
    # LIBSVM is deterministic on breast cancer's fixed split: its two seeds are one
    # measurement, judged on the exact binomial interval of its test set's 143 points
    assert list(table["n"].fillna(0)) == [4, 143, 0, 0]
    assert list(table["unit"].fillna("")) == ["problems", "test points", "", ""]
    assert "| LIBLINEAR's accuracy is LIBSVM's | Table 1 |" in out
    page = mlflow.artifacts.load_text(f"{outer.info.artifact_uri}/claims.html")
    assert "figures/test_accuracy/cd_diagram.png" in page  # a figure's caption
    assert "<img src='data:image/png;base64," in page  # and the figure, embedded

    assert cli.main(workflow_args(store)) == 0  # done: nothing runs again
    assert "[1/4] sweep: finished before" in capfd.readouterr().out
    assert len(every_run(store)) == len(found)

    removed = training_runs(found)[0]
    MlflowClient(f"sqlite:///{store}").delete_run(removed.info.run_id)
    assert cli.main(workflow_args(store)) == 0
    out = capfd.readouterr().out
    assert "1 run(s) it listed are gone; resuming it" in out
    assert out.count("SKIPPED  FINISHED before") == 7
    again = every_run(store)
    assert_one_finished_run_per_config(again, 8)
    assert [r.info.run_id for r in again if r.data.tags.get("svmlab.role") == "workflow"] == [
        outer.info.run_id
    ]


@pytest.mark.slow
def test_an_interrupted_workflow_completes_when_run_again(store, tmp_path):
    without_report = tmp_path / "tiny.yaml"
    without_report.write_text(
        yaml.safe_dump({k: v for k, v in tiny_data().items() if k != "report"})
    )
    command = [sys.executable, "-m", "svmlab.app.cli", *workflow_args(store, without_report)]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(TESTS_DIR), *sys.path])}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    for line in process.stdout:  # stop it once the first job has finished
        if line.startswith("[1/8] #"):
            process.send_signal(signal.SIGTERM)
            break
    process.stdout.read()
    assert process.wait() == 130
    found = every_run(store)
    (outer,) = [r for r in found if r.data.tags.get("svmlab.role") == "workflow"]
    assert outer.info.status == "KILLED"
    assert 1 <= sum(r.info.status == "FINISHED" for r in training_runs(found)) < 8

    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    again = every_run(store)
    assert_one_finished_run_per_config(again, 8)
    outers = [r for r in again if r.data.tags.get("svmlab.role") == "workflow"]
    assert [(r.info.run_id, r.info.status) for r in outers] == [(outer.info.run_id, "FINISHED")]
    sweeps = [r for r in again if r.data.tags.get("svmlab.role") == "sweep"]
    assert [r.info.status for r in sweeps] == ["KILLED", "FINISHED"]


def finished_outer(
    store: Path, workflow: spec.Workflow, runs: pd.DataFrame, status: str = "FINISHED"
) -> str:
    """An outer run of ``workflow`` (quick scale) whose claims are judged on ``runs``."""
    from svmlab.tracking.workflows import OuterRun

    outer = OuterRun(
        f"sqlite:///{store}",
        experiment_name(workflow, "quick"),
        "outer",
        outer_tags(workflow, "quick") | {"svmlab.workflow.digest": status},
    )
    judged = claims.judge_all(workflow.claims, runs, lambda names: {})
    folder = store.parent / status
    folder.mkdir()
    claims.write(folder, workflow, "quick", judged)
    outer.log(folder, {})
    outer.end(status)
    return outer.run_id


def test_a_long_step_before_the_sweep_does_not_get_the_outer_run_reaped(store):
    """The sweep reaps its experiment when it starts; a selection that took longer than the
    silence a reap allows must not end the outer run, whose process still runs it."""
    from svmlab.tracking.liveness import reap
    from svmlab.tracking.workflows import OuterRun

    tiny = spec.load(str(TINY))
    uri = f"sqlite:///{store}"
    outer = OuterRun(uri, experiment_name(tiny, "quick"), "outer", outer_tags(tiny, "quick"))
    try:
        assert reap(uri, [outer.experiment_id], stale_after_s=0.0) == []
        assert MlflowClient(uri).get_run(outer.run_id).info.status == "RUNNING"
    finally:
        outer.end("FINISHED")


def test_the_claims_table_is_printed_from_each_workflows_last_finished_run(store, capfd):
    tiny = spec.load(str(TINY))
    runs = pd.DataFrame(
        {
            "tags.solver": ["liblinear", "libsvm"] * 4,
            "tags.dataset": ["breast_cancer"] * 4 + ["synthetic_gaussian"] * 4,
            "params.seed": ["0", "0", "1", "1"] * 2,
            "metrics.test_accuracy": [0.97, 0.9995, 0.98, 0.9995, 0.9, 0.92, 0.91, 0.92],
        }
    )
    finished_outer(store, tiny, runs)
    finished_outer(store, tiny, runs.assign(**{"metrics.test_accuracy": 0.5}), "FAILED")
    uri = ["--tracking-uri", f"sqlite:///{store}"]
    assert cli.main(["workflow", "table", str(TINY), *uri]) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[:5] == [
        "Verdicts per workflow (the paper's claims; svmlab's statements in brackets):",
        "",
        "| workflow | reproduced | not reproduced | inconclusive | depends | not testable here |",
        "|---|---|---|---|---|---|",
        "| `tiny` | 0 (0) | 0 (0) | 2 (0) | 0 (0) | 2 (0) |",
    ]
    lines = lines[6:]
    assert lines[:5] == [
        "The paper's claims:",
        "",
        (
            "| workflow | claim (source) | paper | n | unit | confidence | svmlab (quick scale) | "
            "interval | verdict |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
        (
            "| `tiny` | LIBLINEAR's accuracy is LIBSVM's (Table 1) | 0 | 4 | problems | 87.5 % | "
            "-0.01975 | [-0.0295, -0.01] | inconclusive |"
        ),
    ]
    assert lines[5:] == [  # its two seeds gave the same accuracy: one measurement
        (
            "| `tiny` | LIBSVM reaches 99.9 % on breast cancer (Table 1) | 0.999 | 1 | seeds | 0 % | "
            "0.9995 | [0.9995, 0.9995] | inconclusive |"
        ),
        (
            "| `tiny` | LIBLINEAR's accuracy on a9a (Table 2) | 0.85 |  |  |  |  |  | "
            "not testable here |"
        ),
        (
            "| `tiny` | LIBLINEAR is faster than SVM-Light (Table 3) |  |  |  |  |  |  | "
            "not testable here |"
        ),
    ]

    assert cli.main(["workflow", "table", str(TINY), "shootout", *uri]) == 1
    out, err = capfd.readouterr()
    assert out.count("| `tiny` |") == 5 and "shootout" not in out
    assert (
        "workflow shootout has no finished run at scale quick in sqlite:///" in err
    ) and "run 'svmlab workflow shootout --scale quick'" in err
    assert cli.main(["workflow", "table", "fw_papr", *uri]) == 2


def distinct(batch: list[list[str]], key: str) -> set[str]:
    """The values a block key takes among a sweep's jobs (a problem names its dataset)."""
    names = ("dataset", "bsca_problem") if key == "dataset" else (key,)
    return {
        o.split("=", 1)[1].removesuffix("_split")
        for job in batch
        for o in job
        if o.split("=")[0].lstrip("+") in names
    }


@pytest.mark.parametrize("name", spec.names())
def test_every_decidable_claim_at_medium_scale_can_reach_its_confidence(name):
    """A claim's blocks are the values its free block keys (those its sides do not fix) take in
    the sweep: at medium scale there must be enough of them for the signed-rank interval to
    attain the claims' confidence (6 for 95 %), or no verdict could be decided."""
    workflow = spec.load(name)
    batch = jobs(sweep_arguments(workflow, "medium", "sqlite:///x.db"))
    fewest = claims.signed_rank_blocks()
    short = []
    for claim in workflow.claims:
        if claim.untestable:
            continue
        blocks = math.prod(
            max(1, len(distinct(batch, key))) for key in claim.blocks if key not in claim.value
        )
        if blocks < fewest:
            short.append((claim.claim, blocks))
    assert not short, f"fewer than {fewest} blocks at medium scale: {short}"
