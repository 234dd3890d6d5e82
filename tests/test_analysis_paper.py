"""The statistical protocol of the Frank-Wolfe paper (Frandi et al., section 5.6) on its published
Tables 2 and 3: the regression targets of specs/003_frank_wolfe.md, section 4.6, through the
Python API and through `svmlab analyze --csv`."""

import argparse
import json

import mlflow
import numpy as np
import pandas as pd
import pytest

from svmlab.analysis import compare, friedman, hypotheses, table, wilcoxon
from svmlab.app.analyze import add_parser

# dataset, CVM, FW, MFW: mean test accuracy (%) over 5 runs (Table 2)
ACCURACY = """a1a 83.52 83.52 83.52
a2a 83.55 83.56 83.56
a3a 83.40 83.39 83.41
a4a 84.06 84.10 84.07
a5a 84.02 84.03 84.05
a6a 84.28 84.26 84.25
a7a 84.18 84.23 84.29
w1a 97.80 97.31 97.65
w2a 98.06 97.42 97.80
w3a 98.21 97.31 97.60
w4a 98.28 97.46 97.91
w5a 98.39 97.50 98.36
w6a 98.72 97.40 98.43
w7a 98.73 97.43 97.88
w8a 99.34 97.80 97.59
Letter 97.48 96.54 97.35
Pendigits 98.35 97.68 97.65
USPS 95.63 95.12 95.47
Reuters 97.10 96.40 95.60
MNIST 98.46 97.91 98.36
Protein 69.79 69.73 69.78
Shuttle 99.67 98.08 97.82
IJCNN 98.59 95.71 97.31
USPS-Ext 99.50 99.30 99.57
KDD10pc 99.87 98.82 99.10
KDD-full 91.77 91.53 91.82"""
# dataset, CVM, FW, MFW: mean training time (s) over 5 runs (Table 3)
TIME = """a1a 6.26 12.5 0.712
a2a 16 19.3 1.46
a3a 33.8 26.8 2.78
a4a 89.1 40.4 6.37
a5a 171 56.1 11.1
a6a 590 164 45
a7a 2060 1420 365
w1a 3.59 0.286 1.67
w2a 7.9 0.658 2.31
w3a 12.8 0.76 2.27
w4a 30.4 1.26 6.76
w5a 52.7 1.78 15.8
w6a 131 2.67 29.4
w7a 215 2.58 91.4
w8a 1030 9.64 111
Letter 23.7 13.3 12.3
Pendigits 0.554 0.82 0.658
USPS 6.89 7.58 7.22
Reuters 7.24 2.17 1.69
MNIST 364 301 349
Protein 247000 11900 2000
Shuttle 1.41 1.69 0.176
IJCNN 198 40.5 34.4
USPS-Ext 84.4 26.7 161
KDD10pc 42.3 0.414 1.22
KDD-full 19.5 0.764 0.744"""


def frame(text: str) -> pd.DataFrame:
    rows = [line.split() for line in text.splitlines()]
    return pd.DataFrame(
        [[float(v) for v in row[1:]] for row in rows],
        index=[row[0] for row in rows],
        columns=["CVM", "FW", "MFW"],
    )


ACC, TIME_S = frame(ACCURACY), frame(TIME)

# (table, A, B, alternative, W+, W-, exact p with Pratt) from the spec's reproduction fixture
WILCOXON_TARGETS = [
    (TIME_S, "FW", "CVM", "less", 17, 334, 3.0845e-06),
    (TIME_S, "MFW", "CVM", "less", 20, 331, 5.5283e-06),
    (TIME_S, "FW", "MFW", "two-sided", 192, 159, 0.68932),
    (ACC, "FW", "CVM", "less", 19, 331, 4.9770e-06),
    (ACC, "MFW", "CVM", "less", 48.5, 301.5, 3.5799e-04),
    (ACC, "FW", "MFW", "less", 59, 289, 1.2259e-03),
]


@pytest.mark.parametrize("values, a, b, alternative, w_plus, w_minus, p", WILCOXON_TARGETS)
def test_exact_pratt_wilcoxon_reproduces_the_paper(values, a, b, alternative, w_plus, w_minus, p):
    result = wilcoxon.signed_rank_test(values[a], values[b], alternative=alternative)
    assert (result.w_plus, result.w_minus) == (w_plus, w_minus)
    assert result.statistic == min(w_plus, w_minus)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(p, rel=1e-4)


def test_unrounded_differences_break_the_ties_the_rounding_keeps():
    """Float subtraction of the accuracy table gives distinct |d| that are equal in the data."""
    raw = wilcoxon.signed_rank_test(ACC["MFW"], ACC["CVM"], alternative="less", rtol=0)
    assert raw.w_plus != 48.5  # equal differences differ in their last bits and lose their tie
    assert wilcoxon.signed_rank_test(ACC["MFW"], ACC["CVM"], alternative="less").w_plus == 48.5


@pytest.mark.parametrize(
    "a, b, p", [("FW", "CVM", 4.08e-06), ("MFW", "CVM", 2.84e-04), ("FW", "MFW", 1.09e-03)]
)
def test_wilcox_zero_method_gives_the_values_the_spec_rules_out(a, b, p):
    result = wilcoxon.signed_rank_test(ACC[a], ACC[b], alternative="less", zero_method="wilcox")
    assert result.p_value == pytest.approx(p, rel=5e-3)


def test_normal_approximation_is_what_the_spec_computed():
    """The spec's z = -3.2149 (p = 6.52e-04) has no continuity correction; with it, |z| shrinks."""
    plain = wilcoxon.signed_rank_test(
        ACC["MFW"], ACC["CVM"], alternative="less", method="normal", continuity=False
    )
    assert plain.method == "normal"
    assert plain.z == pytest.approx(-3.2149, abs=1e-4)
    assert plain.p_value == pytest.approx(6.52e-04, rel=5e-3)
    corrected = wilcoxon.signed_rank_test(
        ACC["MFW"], ACC["CVM"], alternative="less", method="normal"
    )
    assert plain.z < corrected.z < 0


def test_friedman_on_time_reproduces_the_paper():
    ranks = friedman.block_ranks(TIME_S, higher_is_better=False)
    np.testing.assert_allclose(ranks.mean(), [2.6923, 1.7692, 1.5385], atol=1e-4)
    result = friedman.friedman(ranks)
    assert result.chi2 == pytest.approx(19.3846, abs=1e-4) == result.chi2_tied
    assert result.iman_davenport_f == pytest.approx(14.8585, abs=1e-4)
    assert (result.df1, result.df2) == (2, 50)
    assert result.iman_davenport_p == pytest.approx(8.619e-06, rel=1e-3)
    assert 2 * result.iman_davenport_p == pytest.approx(1.72e-05, rel=3e-3)  # the paper's p


def test_friedman_on_accuracy_with_and_without_the_tie_correction():
    ranks = friedman.block_ranks(ACC, higher_is_better=True)
    np.testing.assert_allclose(ranks.mean(), [1.4615, 2.5577, 1.9808], atol=1e-4)
    result = friedman.friedman(ranks)
    assert result.chi2 == pytest.approx(15.6346, abs=1e-4)
    assert result.chi2_tied == pytest.approx(16.4242, abs=1e-4)
    assert result.iman_davenport_f == pytest.approx(10.7483, abs=1e-4)
    assert result.iman_davenport_f_tied == pytest.approx(11.5417, abs=1e-4)
    assert result.iman_davenport_p == pytest.approx(1.310e-04, rel=2e-3)
    assert result.iman_davenport_p_tied == pytest.approx(7.56e-05, rel=2e-3)


def test_decisions_of_table_7_at_the_three_levels():
    """H0 rejected for every pair but FW vs MFW time, at 0.01, 0.05 and 0.10 (unadjusted, as in
    the paper)."""
    options = compare.Options(correction="none", bayes_samples=200)
    for values, a, b, alternative, *_ in WILCOXON_TARGETS:
        row = compare.signed_rank_table(
            values, [hypotheses.Pair(a, b, alternative)], table.Measure("m", True), options
        ).iloc[0]
        expected = not (values is TIME_S and {a, b} == {"FW", "MFW"})
        assert all((row["p_value"] <= alpha) == expected for alpha in options.alphas)


def tidy_csv(tmp_path) -> str:
    """Both tables as a published table is typed in: dataset, solver, measure, value."""
    tidy = pd.concat(
        [
            values.rename_axis("dataset")
            .rename_axis(columns="solver")
            .stack()
            .rename("value")
            .reset_index()
            .assign(measure=name)
            for name, values in (("accuracy", ACC), ("time_s", TIME_S))
        ]
    )
    path = tmp_path / "frandi.csv"
    tidy[["dataset", "solver", "measure", "value"]].to_csv(path, index=False)
    return str(path)


def test_tables_5_and_6_from_the_published_table_in_one_run(new_store, tmp_path, capsys):
    """`svmlab analyze --csv` on the tidy table with the paper's three directed hypotheses."""
    parser = argparse.ArgumentParser(prog="svmlab")
    add_parser(parser.add_subparsers(dest="command", required=True))
    uri = f"sqlite:///{new_store(tmp_path / 'analysis.db')}"
    # lists comma-separated and unused options empty, as the MLproject entry point passes them
    args = parser.parse_args(
        [
            "analyze",
            "--csv",
            tidy_csv(tmp_path),
            "--tracking-uri",
            uri,
            "-m",
            "accuracy:higher:1,time_s:lower",
            "--control",
            "CVM",
            "-H",
            "FW<CVM,MFW<CVM",
            "-H",
            "accuracy:FW<MFW",
            "--correction",
            "none",
            "--alpha",
            "0.01,0.05,0.1",
            "-e",
            "",
            "--filter",
            "",
            "--block",
            "",
            "--treatment",
            "",
            "--objective",
            "",
            "--bayes-samples",
            "2000",
        ]
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "Iman-Davenport F(2, 50) from the tie-corrected chi2 = 14.8585" in out
    assert "FW vs MFW (two-sided): W = 159 (exact)" in out
    client = mlflow.MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("svmlab-analysis").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["time_s.iman_davenport_f"] == pytest.approx(14.858, abs=5e-4)
    client.download_artifacts(run.info.run_id, "", str(tmp_path / "artifacts"))
    summary = json.loads((tmp_path / "artifacts" / "summary.json").read_text())
    time_pairs = {(p["A"], p["B"]): p for p in summary["measures"]["time_s"]["pairwise"]}
    assert set(time_pairs) == {("FW", "CVM"), ("MFW", "CVM"), ("FW", "MFW")}
    # Table 5 (time): W and p of the paper
    for pair, w, p in (
        (("FW", "CVM"), 17, 3.085e-06),
        (("MFW", "CVM"), 20, 5.528e-06),
        (("FW", "MFW"), 159, 0.6893),
    ):
        assert time_pairs[pair]["W"] == w
        assert time_pairs[pair]["p_value"] == pytest.approx(p, rel=2e-4)
    acc_pairs = {(p["A"], p["B"]): p for p in summary["measures"]["accuracy"]["pairwise"]}
    assert acc_pairs["FW", "CVM"]["p_value"] == pytest.approx(4.977e-06, rel=2e-4)
    assert acc_pairs["FW", "MFW"]["alternative"] == "less"
    assert summary["measures"]["accuracy"]["rope"] == 1.0
    assert summary["options"]["hypotheses"] == ["FW < CVM", "MFW < CVM", "accuracy:FW < MFW"]
    markdown = (tmp_path / "artifacts" / "accuracy" / "wilcoxon.md").read_text()
    assert markdown.startswith("| A | B | alternative | n | n_zero | W+ | W- | W |")
    for stem in ("table", "ranks", "omnibus", "nemenyi", "wilcoxon", "control"):
        for suffix in ("csv", "md", "html"):
            assert (tmp_path / "artifacts" / "time_s" / f"{stem}.{suffix}").is_file()
    control = pd.read_csv(tmp_path / "artifacts" / "time_s" / "control.csv")
    # the control table tests the same directed hypotheses as the pairwise table
    assert list(zip(control["A"], control["B"], control["alternative"])) == [
        ("FW", "CVM", "less"),
        ("MFW", "CVM", "less"),
    ]
    np.testing.assert_allclose(control["p_wilcoxon"], [3.0845e-06, 5.5283e-06], rtol=1e-4)
