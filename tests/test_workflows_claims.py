"""Claims decided on blocks of runs read from a real MLflow store: a censored block (a target
never reached, a cap, a time known only within an interval), a growth slope, an accuracy against
the majority-class classifier, copies of a block counted once, the confidence a verdict needs,
readings and unreported settings, the runs of the current sweep only, and the two tallies (the
paper's claims, svmlab's own)."""

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import Dataset, DatasetInput, Metric, Param, RunTag

from svmlab.analysis import measurements, precision, stage
from svmlab.app import cli
from svmlab.app.launch.sweep import jobs_table
from svmlab.app.workflow import analysis_request, experiment_name, outer_tags
from svmlab.tracking import queries
from svmlab.tracking.sweeps import PARENT_TAG, ROLE_TAG, SWEEP_DIR_TAG
from svmlab.tracking.workflows import OuterRun
from svmlab.vocabulary import TRACE_ARTIFACT
from svmlab.workflows import claims, spec

TINY = Path(__file__).parent / "support" / "workflows" / "tiny.yaml"
EXPERIMENT = experiment_name(spec.load(str(TINY)), "quick")


class Store:
    """Training runs written into a test store with MLflow's client, as svmlab logs them:
    tags solver and dataset, params seed and solver.C, final metrics, the dataset's profile
    (n_train) and, for a certified run, its trace."""

    def __init__(self, path: Path):
        self.uri = f"sqlite:///{path}"
        self.client = MlflowClient(self.uri)
        found = self.client.get_experiment_by_name(EXPERIMENT)
        self.experiment_id = (
            found.experiment_id if found else self.client.create_experiment(EXPERIMENT)
        )

    def run(
        self,
        solver: str,
        dataset: str,
        seed: int = 0,
        C: float = 1.0,
        n_train: int = 100,
        gaps: list[float] | None = None,
        tags: dict | None = None,
        params: dict | None = None,
        n_test: int = 1000,
        traced: bool = True,
        **metrics: float,
    ) -> str:
        """A FINISHED run; ``gaps``: its certified relative gap at times 1, 2, ... s (in its
        trace unless not ``traced``: a solver that certifies its final point only); ``tags``
        and ``params``: more of them (a stop reason, a grid setting)."""
        run_id = self.client.create_run(self.experiment_id).info.run_id
        tags = {"solver": solver, "dataset": dataset, **(tags or {})}
        if gaps is not None:
            tags["svmlab.formulation"] = "hinge_l2"
            metrics |= {"rel_gap_hinge_l2": gaps[-1], "n_iter": len(gaps)}
        self.client.log_batch(
            run_id,
            metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
            params=[
                Param(k, str(v)) for k, v in {"seed": seed, "solver.C": C, **(params or {})}.items()
            ],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        profile = json.dumps({"n_train": n_train, "n_test": n_test})
        self.client.log_inputs(
            run_id, [DatasetInput(Dataset(dataset, "d" * 32, "code", "{}", profile=profile))]
        )
        if gaps is not None:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / Path(TRACE_ARTIFACT).name
                pd.DataFrame(
                    {
                        "iteration": np.arange(1.0, len(gaps) + 1),
                        "time_s": np.arange(1.0, len(gaps) + 1),
                        **({"rel_gap_hinge_l2": gaps} if traced else {}),
                    }
                ).to_parquet(path)
                self.client.log_artifact(run_id, str(path), str(Path(TRACE_ARTIFACT).parent))
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def judged(self, *claim_list: spec.Claim, run_ids: set[str] | None = None) -> list:
        """The claims judged as a workflow judges them, on the store's finished runs."""
        runs, _ = measurements.finished_runs([EXPERIMENT], "", self.uri, run_ids)
        return claims.judge_all(
            list(claim_list),
            runs,
            lambda names: precision.derive(runs, names, self.uri, queries.load_trace)[0],
        )


def claim(**fields) -> spec.Claim:
    """A claim checked as a workflow file's claim is."""
    return claims_of(**fields)[0]


def claims_of(**fields) -> list[spec.Claim]:
    """The claims a workflow file's claim becomes: it, then its companion if it has one."""
    return spec.parse(
        {
            "paper": "p",
            "description": "d",
            "sweep": {"preset": "tiny"},
            "scales": {"quick": {}, "paper": {}},
            "analysis": {"measures": ["fit_time_s"]},
            "claims": [{"claim": "c", "source": "s", **fields}],
        },
        Path("w.yaml"),
    ).claims


FASTER = {
    "measure": "time_to_gap_1e-2",
    "value": {"solver": "a"},
    "relative_to": {"solver": "b"},
    "decide": {"below": 1},
}
CERTIFIED = [0.5, 0.1, 0.005]  # reaches 1e-2 at 3 s
NEVER = [0.5, 0.3, 0.2, 0.1, 0.05]  # never reaches 1e-2; its run took 5 s


def test_a_censored_block_can_only_make_the_tested_sides_ratio_larger(store):
    """a never reaches the target on d0: its time there is more than its run's 5 s, so the
    ratio of that block is at least 5/3 and the interval is open upwards: a claim that a is
    faster cannot be reproduced, and with a slower than b everywhere else it is refuted."""
    s = Store(store)
    s.run("a", "d0", gaps=NEVER, fit_time_s=5.0)
    s.run("b", "d0", gaps=CERTIFIED, fit_time_s=3.0)
    for i in range(1, 6):
        s.run("a", f"d{i}", gaps=[0.5, 0.005], fit_time_s=2.0)
        s.run("b", f"d{i}", gaps=CERTIFIED, fit_time_s=3.0)
    (faster,) = s.judged(claim(**FASTER))
    assert faster.n == 6 and faster.interval[1] == np.inf
    assert faster.verdict == claims.INCONCLUSIVE
    assert "1 run(s) never reached the target or stopped at a cap: censored" in faster.detail
    (slower,) = s.judged(claim(**FASTER | {"decide": {"above": 1}}))
    assert slower.verdict == claims.INCONCLUSIVE  # 5 blocks say 2/3: the interval holds 1

    for i in range(1, 6):  # now a is slower than b everywhere: the censored block agrees
        s.run("a", f"e{i}", gaps=[0.5, 0.3, 0.2, 0.005], fit_time_s=4.0)
        s.run("b", f"e{i}", gaps=[0.005], fit_time_s=1.0)
    only = {f"e{i}" for i in range(1, 6)} | {"d0"}
    runs = claim(
        **FASTER
        | {
            "value": {"solver": "a", "dataset": sorted(only)},
            "relative_to": {"solver": "b", "dataset": sorted(only)},
        }
    )
    (refuted,) = s.judged(runs)
    assert refuted.verdict == claims.NOT_REPRODUCED and refuted.interval[0] > 1


def test_a_censored_other_side_can_only_make_the_ratio_smaller(store):
    """b never reaches the target on d0 (its run took 8 s), a did in 1 s: that block's ratio is
    below 1/8, so it holds 'a is faster' and the claim is reproduced on all six blocks; a ratio
    of means would have divided by infinity."""
    s = Store(store)
    s.run("a", "d0", gaps=[0.005], fit_time_s=1.0)
    s.run("b", "d0", gaps=NEVER + [0.02] * 3, fit_time_s=8.0)
    for i in range(1, 6):
        s.run("a", f"d{i}", gaps=[0.5, 0.005], fit_time_s=2.0)
        s.run("b", f"d{i}", gaps=CERTIFIED, fit_time_s=3.0)
    (judged,) = s.judged(claim(**FASTER))
    assert judged.verdict == claims.REPRODUCED and judged.n == 6
    assert judged.interval[0] == 0.0 and judged.interval[1] == pytest.approx(2 / 3)
    assert judged.row()["estimate"] == "0.6667" and judged.row()["interval"] == "[0, 0.6667]"


def test_a_censored_iteration_count_is_more_than_the_runs_iterations(store):
    """On d0 a stopped after 5 iterations (100 s) without reaching the target: its count is
    at least 5, not its time; the estimate's lower end is that of the counts 5, 2, 2."""
    s = Store(store)
    s.run("a", "d0", gaps=NEVER, fit_time_s=100.0)
    for i in (1, 2):
        s.run("a", f"d{i}", gaps=[0.5, 0.005], fit_time_s=2.0)
    (judged,) = s.judged(
        claim(measure="iters_to_gap_1e-2", value={"solver": "a"}, decide={"below": 10})
    )
    assert judged.estimate == (pytest.approx(2.75), np.inf)  # Walsh averages 2, 2, 2, 3.5, 3.5, 5
    assert judged.interval == (2.0, np.inf) and judged.row()["estimate"] == "2.75 to inf"


def test_identical_blocks_count_once_and_a_verdict_needs_six_distinct_blocks(store):
    """A deterministic solver timed identically on three seeds of one dataset is one block, not
    three; five distinct datasets give the exact signed-rank interval 93.8 %, below 95 %:
    inconclusive however clear; six give 96.9 %: decided."""
    s = Store(store)
    for seed in range(3):
        s.run("a", "w1a", seed, fit_time_s=1.0)
        s.run("b", "w1a", seed, fit_time_s=100.0)
    faster = claim(
        measure="fit_time_s",
        value={"solver": "a"},
        relative_to={"solver": "b"},
        decide={"below": 1},
    )
    (one,) = s.judged(faster)
    assert one.verdict == claims.INCONCLUSIVE and one.n == 1 and one.confidence == 0.0
    assert (
        "1 distinct block(s) (dataset x seed), 2 more block(s) of the same problem with "
        "exactly the same values on both sides (copies of one measurement, counted "
        "once)"
    ) in one.detail
    for i in range(5):
        s.run("a", f"d{i}", fit_time_s=1.0 + i / 10)
        s.run("b", f"d{i}", fit_time_s=100.0)
    five = claim(
        measure="fit_time_s",
        value={"solver": "a", "dataset": [f"d{i}" for i in range(5)]},
        relative_to={"solver": "b"},
        decide={"below": 1},
    )
    (judged,) = s.judged(five)
    assert judged.verdict == claims.INCONCLUSIVE and judged.n == 5
    assert judged.confidence == pytest.approx(1 - 2 / 32) and judged.interval[1] < 0.02
    assert judged.detail.startswith(
        "the interval attains 93.8 % confidence, below the 95 % a "
        "verdict needs (the exact signed-rank interval needs 6 "
        "distinct blocks, here 5)"
    )
    assert (judged.row()["n"], judged.row()["unit"], judged.row()["confidence"]) == (
        5,
        "problems",
        "93.8 %",
    )
    (six,) = s.judged(replace(five, value={"solver": "a"}))
    assert six.verdict == claims.REPRODUCED and six.n == 6
    assert six.confidence == pytest.approx(1 - 2 / 64)


def test_a_single_sides_value_gets_an_interval_over_blocks_that_can_straddle(store):
    s = Store(store)
    for seed, accuracy in enumerate([0.80, 0.82, 0.84, 0.84, 0.86, 0.88]):
        s.run("a", "a1a", seed, test_accuracy=accuracy, test_majority_rate=0.5)
    (near,) = s.judged(
        claim(
            measure="test_accuracy", value={"solver": "a"}, paper=0.84, decide={"tolerance": 0.05}
        )
    )
    (edge,) = s.judged(
        claim(
            measure="test_accuracy", value={"solver": "a"}, paper=0.84, decide={"tolerance": 0.02}
        )
    )
    (far,) = s.judged(
        claim(
            measure="test_accuracy", value={"solver": "a"}, paper=0.95, decide={"tolerance": 0.02}
        )
    )
    assert near.interval == pytest.approx((0.80, 0.88)), near.detail
    assert near.verdict == claims.REPRODUCED, near.detail
    assert edge.verdict == claims.INCONCLUSIVE and "straddles" in edge.detail
    assert far.verdict == claims.NOT_REPRODUCED


def test_an_accuracy_on_one_fixed_test_set_gets_its_exact_binomial_interval(store):
    """A deterministic solver on a fixed split: three seeds, one accuracy, one measurement;
    its uncertainty is the test set's: the Clopper-Pearson interval of 900 correct of 1000."""
    s = Store(store)
    for seed in range(3):
        s.run("libsvm", "a9a", seed, test_accuracy=0.9, test_majority_rate=0.76)
    (judged,) = s.judged(
        claim(
            measure="test_accuracy",
            value={"solver": "libsvm"},
            paper=0.9,
            decide={"tolerance": 0.03},
        )
    )
    assert judged.verdict == claims.REPRODUCED and judged.n == 1000
    assert (judged.unit, judged.confidence) == ("test points", 0.95)
    assert judged.interval == pytest.approx((0.8797, 0.9179), abs=1e-4)
    assert (
        "one fixed test set of 1000 points (3 block(s) with that same value: one "
        "measurement): the exact binomial (Clopper-Pearson) 95 % interval of 900 correct"
    ) in judged.detail


def test_growth_with_n_is_the_fitted_slope_of_the_log_ratio_against_log_n(store):
    """a's time over b's falls as n^-0.5 over five sizes: slope -0.5, so 'a's speed-up grows
    with n' holds; on four sizes (at most 1 - 2/4! = 91.7 %) or two a slope is not decided."""
    s = Store(store)
    for n in (1000, 2000, 4000, 8000, 16000):
        s.run("a", f"n{n}", n_train=n, fit_time_s=float(n) ** 0.5)
        s.run("b", f"n{n}", n_train=n, fit_time_s=float(n))
    grows = claim(
        measure="fit_time_s",
        growth_with="n_train",
        value={"solver": "a"},
        relative_to={"solver": "b"},
        decide={"below": 0},
    )
    (judged,) = s.judged(grows)
    assert judged.estimate == pytest.approx((-0.5, -0.5)) and judged.n == 5
    assert judged.verdict == claims.REPRODUCED and "Theil-Sen slope" in judged.detail
    four = [f"n{n}" for n in (1000, 2000, 4000, 8000)]
    (fewer,) = s.judged(replace(grows, value={"solver": "a", "dataset": four}))
    assert fewer.verdict == claims.INCONCLUSIVE and fewer.confidence == pytest.approx(1 - 2 / 24)
    assert judged.test == "slope of the log ratio against log n_train < 0"
    (two,) = s.judged(
        claim(
            **{
                **FASTER,
                "measure": "fit_time_s",
                "growth_with": "n_train",
                "value": {"solver": "a", "dataset": ["n1000", "n2000"]},
                "relative_to": {"solver": "b", "dataset": ["n1000", "n2000"]},
                "decide": {"below": 0},
            }
        )
    )
    assert two.verdict == claims.INCONCLUSIVE and "over 2 sizes" in two.detail


def test_sensitivity_to_C_compares_the_fitted_slopes_over_the_same_C_grid(store):
    """a's time is flat in C, b's proportional to C (on 1, 10, 100): per block |0| - |1| = -1;
    b's extra value of C (1000) is not on a's grid and is left out of b's fit."""
    s = Store(store)
    for i in range(6):
        for C in (1.0, 10.0, 100.0):
            s.run("a", f"d{i}", 0, C, fit_time_s=2.0)
            s.run("b", f"d{i}", 0, C, fit_time_s=C)
        s.run("b", f"d{i}", 0, 1000.0, fit_time_s=1.0)
    (judged,) = s.judged(
        claim(
            measure="fit_time_s",
            sensitivity_to="solver.C",
            value={"solver": "a"},
            relative_to={"solver": "b"},
            decide={"below": 0},
        )
    )
    assert judged.estimate == pytest.approx((-1.0, -1.0)) and judged.n == 6
    assert judged.verdict == claims.REPRODUCED


def test_a_time_capped_at_the_largest_C_still_bounds_the_slope_from_below(store):
    """b's time grows with C (1, 10, 100 s) and its runs at C = 100 were stopped by a cap: b's
    true slope is at least 1, so a (flat) is less sensitive in every block. Capped at the
    smallest C instead, b's slope could be anything: the claim is then inconclusive."""
    s = Store(store)
    capped = {"svmlab.stop_reason": "max_iter=10 iterations"}
    for i in range(6):
        for C in (1.0, 10.0, 100.0):
            s.run("a", f"d{i}", 0, C, fit_time_s=2.0)
            s.run("b", f"d{i}", 0, C, fit_time_s=C, tags=capped if C == 100.0 else None)
            s.run("c", f"d{i}", 0, C, fit_time_s=C, tags=capped if C == 1.0 else None)
    less = {
        "measure": "fit_time_s",
        "sensitivity_to": "solver.C",
        "value": {"solver": "a"},
        "decide": {"below": 0},
    }
    (bounded,) = s.judged(claim(**less, relative_to={"solver": "b"}))
    assert bounded.verdict == claims.REPRODUCED
    assert bounded.estimate[0] == bounded.interval[0] == -np.inf
    assert bounded.estimate[1] == pytest.approx(-1.0) and bounded.interval[1] < 0
    assert "6 run(s) never reached the target or stopped at a cap" in bounded.detail
    (open_,) = s.judged(claim(**less, relative_to={"solver": "c"}))
    assert open_.verdict == claims.INCONCLUSIVE and open_.interval[0] == -np.inf
    assert open_.interval[1] == pytest.approx(0.0, abs=1e-9)  # a's |slope| less 0


def test_a_constant_classifier_cannot_reproduce_an_accuracy(store):
    """97 % on a test set of 20,000 points whose majority class is 97 % is a constant
    classifier's accuracy: within 1 pp of a paper's 97.5 %, yet not reproduced, since that
    figure would beat the constant classifier on this test set; near a paper's 97.1 %, which
    would not, inconclusive. A learned model's 99 % reproduces 98.5 %; without the test set's
    majority rate nothing rules a constant classifier out."""
    s = Store(store)
    s.run("constant", "w3a", n_test=20000, test_accuracy=0.97, test_majority_rate=0.97)
    s.run("learned", "w3a", n_test=20000, test_accuracy=0.99, test_majority_rate=0.97)
    s.run("unknown", "w3a", n_test=20000, test_accuracy=0.99)
    beaten, near, learned, unknown = s.judged(
        claim(
            measure="test_accuracy",
            value={"solver": "constant"},
            paper=0.975,
            decide={"tolerance": 0.01},
        ),
        claim(
            measure="test_accuracy",
            value={"solver": "constant"},
            paper=0.971,
            decide={"tolerance": 0.01},
        ),
        claim(
            measure="test_accuracy",
            value={"solver": "learned"},
            paper=0.985,
            decide={"tolerance": 0.01},
        ),
        claim(
            measure="test_accuracy",
            value={"solver": "unknown"},
            paper=0.985,
            decide={"tolerance": 0.01},
        ),
    )
    assert beaten.interval[0] > 0.965 and beaten.interval[1] < 0.985  # within the tolerance
    assert beaten.verdict == claims.NOT_REPRODUCED
    assert beaten.detail.startswith(
        "a run is not significantly better than the majority-class classifier (p = 0.5"
    )
    assert "exact one-sided binomial test of each run's number correct" in beaten.detail
    assert near.verdict == claims.INCONCLUSIVE and "neither would the paper's" in near.detail
    assert learned.verdict == claims.REPRODUCED
    assert unknown.verdict == claims.INCONCLUSIVE
    assert unknown.detail.startswith("the test set's size or majority-class rate is not logged")


def test_the_evaluation_records_the_majority_rate_of_the_test_set():
    from svmlab.recording.results import majority_rate

    assert majority_rate(np.array([1, 1, 1, -1])) == 0.75


def sweep_run(s: Store, outer: OuterRun, folder: Path, listed: list[str], start: int) -> str:
    """A sweep's parent run under the workflow's run, listing ``listed`` in its jobs table."""
    run_id = s.client.create_run(
        s.experiment_id,
        start_time=start,
        tags={ROLE_TAG: "sweep", PARENT_TAG: outer.run_id, SWEEP_DIR_TAG: str(folder.resolve())},
    ).info.run_id
    s.client.log_text(
        run_id,
        jobs_table(
            [
                {
                    "job_num": i,
                    "name": f"job{i}",
                    "status": "FINISHED",
                    "metrics": {},
                    "time_s": 1.0,
                    "run_id": r,
                    "error": None,
                }
                for i, r in enumerate(listed)
            ]
        ),
        "jobs.tsv",
    )
    s.client.set_terminated(run_id, "FINISHED")
    return run_id


def test_only_the_runs_of_the_current_sweep_are_analysed_and_judged(store, tmp_path):
    """An earlier sweep in the same folder trained a dataset since removed; the current one
    reran a1a and reused (``+resume=true``) the earlier run of w1a: claims and analysis read
    those two runs' blocks only."""
    s = Store(store)
    kept = [
        s.run(solver, "w1a", seed, test_accuracy=0.9, fit_time_s=1.0)
        for solver in ("liblinear", "libsvm")
        for seed in range(3)
    ]
    stale = [
        s.run(solver, "removed", seed, test_accuracy=0.1, fit_time_s=1.0)
        for solver in ("liblinear", "libsvm")
        for seed in range(3)
    ]
    fresh = [
        s.run(solver, "a1a", seed, test_accuracy=0.8, fit_time_s=1.0)
        for solver in ("liblinear", "libsvm")
        for seed in range(3)
    ]
    workflow = spec.load(str(TINY))
    outer = OuterRun(s.uri, EXPERIMENT, "outer", outer_tags(workflow, "quick"))
    folder = tmp_path / "multirun"
    sweep_run(s, outer, folder, kept + stale, start=1)
    sweep_run(s, outer, folder, kept + fresh, start=2)
    sweep_run(s, outer, tmp_path / "elsewhere", stale, start=3)  # another folder: not ours

    current = outer.swept_runs([str(folder)])
    assert current == set(kept + fresh)
    request, options = analysis_request(workflow, "quick", s.uri, current)
    analysis = stage.analyze(request, options)
    assert set(analysis.selection.run_ids) == current
    assert set(analysis.selection.long["block"]) == {"w1a", "a1a"}
    removed, everywhere = s.judged(
        claim(measure="test_accuracy", value={"dataset": "removed"}, decide={"above": 0}),
        claim(
            measure="test_accuracy",
            value={"solver": "liblinear"},
            relative_to={"solver": "libsvm"},
            combine="difference",
            decide={"above": -1},
        ),
        run_ids=current,
    )
    assert removed.verdict == claims.UNTESTABLE
    assert "no finished run of dataset=removed" in removed.detail
    assert everywhere.n == 2  # each dataset's three seeds gave the same numbers: one block


def test_the_papers_claims_and_svmlabs_statements_are_two_tables_and_two_counts(
    store, tmp_path, capfd
):
    s = Store(store)
    for seed in range(3):
        s.run(
            "libsvm",
            "breast_cancer",
            seed,
            n_test=100000,
            test_accuracy=0.9995,
            test_majority_rate=0.6,
        )
    paper = claim(
        measure="test_accuracy",
        value={"solver": "libsvm"},
        paper=0.999,
        decide={"tolerance": 0.001},
    )
    ours = claim(
        measure="test_accuracy", value={"solver": "libsvm"}, kind="svmlab", decide={"above": 0.999}
    )
    untestable = claim(untestable={"kind": "software", "why": "no such solver"})
    judged = s.judged(paper, ours, untestable)
    assert claims.metrics(judged) == {
        "claims_reproduced": 1,
        "claims_not_reproduced": 0,
        "claims_inconclusive": 0,
        "claims_depends": 0,
        "claims_not_testable_here": 1,
        "svmlab_statements_reproduced": 1,
        "svmlab_statements_not_reproduced": 0,
        "svmlab_statements_inconclusive": 0,
        "svmlab_statements_depends": 0,
        "svmlab_statements_not_testable_here": 0,
    }

    workflow = spec.load(str(TINY))
    outer = OuterRun(s.uri, EXPERIMENT, "outer", outer_tags(workflow, "quick"))
    folder = tmp_path / "claims"
    folder.mkdir()
    claims.write(folder, workflow, "quick", judged)
    outer.log(folder, claims.metrics(judged))
    outer.end("FINISHED")
    text = (folder / "claims.md").read_text()
    assert (
        "The paper's claims: 1 reproduced, 0 not reproduced, 0 inconclusive, 0 depends, 1 "
        "not testable here; svmlab's own statements: 1 reproduced"
    ) in text
    assert text.index("## The paper's claims") < text.index("## svmlab's own statements")
    table = pd.read_csv(folder / "claims.csv")
    assert list(table["kind"]) == ["paper", "paper", "svmlab"]
    assert list(table.columns) == [*claims.COLUMNS, "kind", "beside"]
    assert "own statements" in (folder / "claims.html").read_text()

    assert cli.main(["workflow", "table", str(TINY), "--tracking-uri", s.uri]) == 0
    out = capfd.readouterr().out
    assert out.startswith("Verdicts per workflow")  # the counts, then the two tables
    first, second = out[out.index("The paper's claims:") :].split("svmlab's own statements:")
    assert first.startswith("The paper's claims:") and first.count("| `tiny` |") == 2
    assert second.count("| `tiny` |") == 1
    assert "| 100000 | test points | 95 % | 0.9995 | [0.9993, 0.9996] |" in second


def test_a_companion_at_equal_precision_can_overturn_a_speed_claim_made_at_a_loose_stop(
    store, tmp_path
):
    """a stops after 1 s at a certified gap of 0.5, b after 3 s at 0.005: at their own stops a
    is faster in every block (the paper's claim, reproduced); at an equal certified gap of 1e-2
    a never got there, so its time is only more than 1 s and the companion cannot say a is
    faster (inconclusive). The companion is svmlab's statement, in the row after its claim."""
    s = Store(store)
    for i in range(6):
        s.run("a", f"d{i}", gaps=[0.5], fit_time_s=1.0)
        s.run("b", f"d{i}", gaps=CERTIFIED, fit_time_s=3.0)
    paper, companion = claims_of(
        measure="fit_time_s",
        value={"solver": "a"},
        relative_to={"solver": "b"},
        decide={"below": 1},
        why="w",
        companion={"measure": "time_to_gap_1e-2", "why": "equal precision"},
    )
    assert (companion.kind, companion.companion_of, companion.measure) == (
        "svmlab",
        "c",
        "time_to_gap_1e-2",
    )
    assert companion.claim == "c, at a certified relative gap of 1e-2 (time to reach it)"
    at_stop, at_gap = s.judged(paper, companion)
    assert at_stop.verdict == claims.REPRODUCED and at_stop.interval[1] < 1
    assert at_gap.verdict == claims.INCONCLUSIVE and at_gap.interval[1] == np.inf
    assert "6 run(s) never reached the target or stopped at a cap" in at_gap.detail

    other = claim(
        measure="test_accuracy", value={"solver": "a"}, kind="svmlab", decide={"above": 0}
    )
    judged = [at_stop, at_gap, *s.judged(other)]
    workflow = spec.load(str(TINY))
    claims.write(tmp_path, workflow, "quick", judged)
    table = pd.read_csv(tmp_path / "claims.csv", keep_default_na=False)
    assert list(table["kind"]) == ["paper", "svmlab", "svmlab"]
    assert list(table["beside"]) == ["", "c", ""]
    text = (tmp_path / "claims.md").read_text()
    paper_table, own_table = text.split("## svmlab's own statements")
    assert "svmlab's companion: c, at a certified relative gap" in paper_table
    assert (
        "1 reproduced, 0 not reproduced, 0 inconclusive, 0 depends, 0 not testable here; "
        "svmlab's companions beside them: 0 reproduced, 0 not reproduced, 1 inconclusive"
    ) in paper_table
    assert "companion" not in own_table
    assert claims.metrics(judged)["svmlab_statements_inconclusive"] == 1


def test_a_run_stopped_by_its_iteration_cap_has_a_censored_time(store):
    """LIBSVM stopped by max_iter (or an epoch cap) after 1 s in every block, NESVM finished in
    2 s: LIBSVM's time is more than 1 s, so 'LIBSVM is faster' cannot be reproduced (it would
    be, taking the cap as a finish), while 'NESVM is faster' stays open too; a finished LIBSVM
    decides."""
    s = Store(store)
    capped = {"svmlab.stop_reason": "max_iter=1000000 iterations", "svmlab.converged": "false"}
    epochs = {"svmlab.stop_reason": "epoch cap of 10 passes", "svmlab.converged": "false"}
    for i in range(6):
        s.run("libsvm", f"d{i}", tags=epochs if i else capped, fit_time_s=1.0)
        s.run("nesvm", f"d{i}", fit_time_s=2.0)
        s.run("libsvm", f"e{i}", tags={"svmlab.converged": "true"}, fit_time_s=1.0)
        s.run("nesvm", f"e{i}", fit_time_s=2.0)
    faster = {"measure": "fit_time_s", "decide": {"below": 1}}
    d = [f"d{i}" for i in range(6)]
    (libsvm_faster,) = s.judged(
        claim(
            **faster,
            value={"solver": "libsvm", "dataset": d},
            relative_to={"solver": "nesvm", "dataset": d},
        )
    )
    assert libsvm_faster.verdict == claims.INCONCLUSIVE
    assert libsvm_faster.interval == (0.5, np.inf)
    assert "6 run(s) never reached the target or stopped at a cap" in libsvm_faster.detail
    e = [f"e{i}" for i in range(6)]
    (finished,) = s.judged(
        claim(
            **faster,
            value={"solver": "libsvm", "dataset": e},
            relative_to={"solver": "nesvm", "dataset": e},
        )
    )
    assert finished.verdict == claims.REPRODUCED and finished.estimate == (0.5, 0.5)


@pytest.mark.slow
def test_a_libsvm_run_stopped_by_max_iter_is_logged_and_judged_as_censored(store):
    """Real runs: LIBSVM capped at 5 SMO iterations names its cap as the stop reason, and a
    claim on its time takes each of those times as more than the run's own (censored)."""
    from support.runs import train

    assert (
        train(
            store,
            "-m",
            "solver=libsvm",
            "solver.max_iter=5",
            "kernel=linear",
            "dataset=breast_cancer",
            "seed=0,1,2",
            f"tracking.experiment={EXPERIMENT}",
            "tracking.log_model=false",
        )
        == 0
    )
    s = Store(store)
    runs, _ = measurements.finished_runs([EXPERIMENT], "", s.uri)
    assert set(runs["tags.svmlab.stop_reason"]) == {"max_iter=5 iterations"}
    (judged,) = s.judged(
        claim(measure="fit_time_s", value={"solver": "libsvm"}, decide={"below": 1e6})
    )
    assert judged.estimate[1] == judged.interval[1] == np.inf
    assert judged.verdict == claims.INCONCLUSIVE
    assert "3 run(s) never reached the target or stopped at a cap" in judged.detail


def test_a_claim_on_unreported_settings_holds_only_where_it_holds_at_every_setting(store):
    """At lam = 1e-4 a is faster than b in every block, at lam = 1e-2 slower: the claim
    depends on a setting the paper does not report, with each setting's verdict; where both
    settings agree it is reproduced, where it fails at both it is not. Both sides at 100 %
    accuracy (a separable set: one error in 2,000 test points at most) cannot be ordered by
    accuracy at any setting."""
    s = Store(store)
    for i in range(6):
        for lam, time_a in (("0.0001", 1.0), ("0.01", 4.0)):
            grid = {"unreported.lam": lam}
            s.run("a", f"d{i}", params=grid, fit_time_s=time_a, test_accuracy=1.0)
            s.run("b", f"d{i}", params=grid, fit_time_s=2.0, test_accuracy=0.9995)
    faster = claim(
        measure="fit_time_s",
        value={"solver": "a"},
        relative_to={"solver": "b"},
        decide={"below": 1},
        grid=["unreported.lam"],
    )
    (judged,) = s.judged(faster)
    assert judged.verdict == claims.DEPENDS and judged.n == 12
    assert judged.row()["verdict"] == "depends on unreported.lam"
    assert "depends on unreported.lam: reproduced at 1 of the 2" in judged.detail
    assert "at unreported.lam=0.0001: reproduced" in judged.detail
    assert "at unreported.lam=0.01: not reproduced" in judged.detail
    runs, _ = measurements.finished_runs([EXPERIMENT], "", s.uri)
    shifted = claims.judge(faster, runs.set_axis(runs.index + 1000))  # labels are not positions
    assert (shifted.verdict, shifted.detail) == (judged.verdict, judged.detail)
    (slower,) = s.judged(replace(faster, decide={"below": 10}))
    assert slower.verdict == claims.REPRODUCED and slower.estimate == (0.5, 2.0)
    (never,) = s.judged(replace(faster, decide={"below": 0.1}))
    assert never.verdict == claims.NOT_REPRODUCED
    assert never.detail.startswith("refuted at each of the 2 setting(s)")

    (accurate,) = s.judged(
        claim(
            measure="test_accuracy",
            value={"solver": "a"},
            relative_to={"solver": "b"},
            combine="difference",
            decide={"below": 0},
            grid=["unreported.lam"],
        )
    )
    assert accurate.verdict == claims.UNTESTABLE
    assert "within 0.001 of test_accuracy = 1 (separable data)" in accurate.detail


def test_a_claim_under_two_readings_of_the_protocol_gets_one_verdict(store):
    """a (one round) is faster than c, a7 (seven rounds) slower: one claim of the paper, one
    verdict, 'depends on the reading of the protocol', counted once in the paper's tally."""
    s = Store(store)
    for i in range(6):
        s.run("a", f"d{i}", fit_time_s=1.0)
        s.run("a7", f"d{i}", fit_time_s=9.0)
        s.run("c", f"d{i}", fit_time_s=3.0 + i)
    readings = {
        "one round": {"value": {"solver": "a"}},
        "seven rounds": {"value": {"solver": "a7"}},
    }
    both = claim(
        measure="fit_time_s",
        value={"solver": "a"},
        relative_to={"solver": "c"},
        decide={"below": 1},
        readings=readings,
    )
    judged, seven = s.judged(both)
    assert judged.verdict == claims.DEPENDS and judged.n == 12
    assert judged.row()["verdict"] == "depends on the reading of the protocol"
    assert "under one round: reproduced" in judged.detail
    assert "under seven rounds: not reproduced" in judged.detail
    assert (seven.claim.kind, seven.verdict) == ("svmlab", claims.NOT_REPRODUCED)
    assert seven.row()["claim"] == "svmlab's reading: c, under seven rounds"
    counted = claims.metrics([judged, seven])
    assert (
        counted["claims_depends"] == 1
        and sum(v for k, v in counted.items() if k.startswith("claims_")) == 1
    )
    assert counted["svmlab_statements_not_reproduced"] == 1
    assert claims.section_count([judged, seven]).endswith(
        "svmlab's companions and readings beside them: 0 reproduced, 1 not reproduced, "
        "0 inconclusive, 0 depends, 0 not testable here"
    )
    faster, _ = s.judged(replace(both, decide={"below": 10}))
    assert faster.verdict == claims.REPRODUCED
    with pytest.raises(spec.WorkflowError, match="readings: two or more readings"):
        claim(
            measure="fit_time_s",
            value={"solver": "a"},
            decide={"below": 1},
            readings={"one": {"solver": "a"}, "two": {"solver": "b"}},
        )


def test_a_time_to_a_gap_without_a_gap_trace_is_interval_censored(store):
    """a certifies its final point only (no gap in its trace): it ended within 1e-2 after 1 s,
    so it got there in [0, 1] s, a ratio to b's 3 s of [0, 1/3]: 'a is faster' holds. Ending
    after 5 s, its ratio is in [0, 5/3]: nothing is decided, where the fit time taken as the
    time would have refuted it."""
    s = Store(store)
    for i in range(6):
        s.run("a", f"d{i}", gaps=[0.005], traced=False, fit_time_s=1.0)
        s.run("slow", f"d{i}", gaps=[0.005], traced=False, fit_time_s=5.0)
        s.run("b", f"d{i}", gaps=CERTIFIED, fit_time_s=3.0)
    quick, slow = s.judged(claim(**FASTER), claim(**FASTER | {"value": {"solver": "slow"}}))
    assert quick.verdict == claims.REPRODUCED
    assert quick.interval == (0.0, pytest.approx(1 / 3)) and quick.estimate[0] == 0.0
    assert (
        "6 run(s) without a traced gap reached the target by the fit's end: interval-censored"
    ) in quick.detail
    assert slow.verdict == claims.INCONCLUSIVE and slow.interval[1] == pytest.approx(5 / 3)


def test_analyze_counts_identical_reruns_of_a_config_once_and_says_so(store, capsys):
    """The same config run three times (the same digest) is one measurement: one row, its
    times averaged, and one line says so."""
    s = Store(store)
    for dataset in ("w1a", "a1a"):
        for solver, times in (("a", [1.0, 2.0, 3.0]), ("b", [4.0])):
            for t in times:
                s.run(
                    solver,
                    dataset,
                    fit_time_s=t,
                    test_accuracy=0.9,
                    tags={"svmlab.config_sha256": f"{solver}{dataset}"},
                )
    selection = measurements.from_mlflow([EXPERIMENT], measures=["fit_time_s"], tracking_uri=s.uri)
    assert len(selection.long) == 4
    assert sorted(selection.long["fit_time_s"]) == [2.0, 2.0, 4.0, 4.0]
    assert selection.notes == [
        (
            "4 run(s) repeat the exact config of another (2 config(s), same "
            "svmlab.config_sha256): each config counted once, its measures "
            "averaged over its identical re-runs"
        )
    ]
    assert (
        cli.main(
            [
                "analyze",
                "--tracking-uri",
                s.uri,
                "-e",
                EXPERIMENT,
                "-m",
                "fit_time_s",
                "--bayes-samples",
                "100",
            ]
        )
        == 0
    )
    assert capsys.readouterr().err.count("4 run(s) repeat the exact config of another") == 1


def test_a_claims_unit_of_replication_is_stated_or_derived_and_checked():
    """Problems where a claim spans datasets, timings for a time on one dataset, seeds for an
    accuracy there; a stated unit wins, and an unknown one is refused in one line."""
    one = {"value": {"solver": "a", "dataset": "w1a"}, "decide": {"below": 1}}
    assert claims.unit_of(claim(measure="fit_time_s", **one)) == "timings"
    assert claims.unit_of(claim(measure="time_to_gap_1e-2", **one)) == "timings"
    assert claims.unit_of(claim(measure="test_accuracy", **one)) == "seeds"
    assert (
        claims.unit_of(claim(measure="test_accuracy", value={"solver": "a"}, decide={"below": 1}))
        == "problems"
    )
    assert claims.unit_of(claim(measure="test_accuracy", unit="problems", **one)) == "problems"
    with pytest.raises(
        spec.WorkflowError,
        match=r"w.yaml: claims\[0\].unit: 'datasets'; "
        r"allowed: problems, seeds, timings",
    ):
        claim(measure="test_accuracy", unit="datasets", **one)
