"""Write an analysis as files (tables as CSV, Markdown and HTML; figures; a JSON summary) and as a
console summary."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from svmlab.analysis import figures, page, posthoc, profiles
from svmlab.analysis.compare import REJECT, SHARES, MeasureAnalysis, Options
from svmlab.analysis.measurements import Selection


def markdown(frame: pd.DataFrame, index: bool = False) -> str:
    """A GitHub-flavoured Markdown table; floats with 4 significant digits."""
    if index:
        frame = frame.reset_index()
    cells = [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells]) + "\n"


def _cell(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return "" if value is None else str(value).replace("|", "\\|")


def write_table(frame: pd.DataFrame, folder: Path, stem: str, index: bool = False) -> None:
    """``stem``.csv, .md and .html in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{stem}.csv", index=index)
    (folder / f"{stem}.md").write_text(markdown(frame, index))
    (folder / f"{stem}.html").write_text(page.table(frame, index))


def tables(analysis: MeasureAnalysis) -> dict[str, tuple[pd.DataFrame, bool]]:
    """The tables of one measure by file stem, with whether their index is part of the table."""
    out = {
        "table": (analysis.table, True),
        "repetitions": (analysis.repetitions, True),
        "ranks": (analysis.ranks, True),
        "mean_ranks": (analysis.mean_ranks.rename("mean_rank").sort_values().to_frame(), True),
        "omnibus": (analysis.omnibus, False),
        "critical_differences": (
            pd.DataFrame(analysis.critical_differences).T.rename_axis("alpha"),
            True,
        ),
        "nemenyi": (analysis.nemenyi, False),
        "wilcoxon": (analysis.pairwise, False),
    }
    if analysis.control is not None:
        out["control"] = (analysis.control, False)
    return out


def write(
    folder: Path,
    selection: Selection,
    analyses: list[MeasureAnalysis],
    options: Options,
    traces: dict[str, pd.DataFrame] | None = None,
    objective: str | None = None,
) -> dict:
    """Every table, figure, the JSON summary and the HTML page under ``folder``; returns the
    summary."""
    folder.mkdir(parents=True, exist_ok=True)
    selection.long.to_csv(folder / "input.csv", index=False)
    alpha = 0.05 if 0.05 in options.alphas else options.alphas[0]
    sections = []
    for analysis in analyses:
        name = analysis.measure.name
        sub = folder / name
        parts = [page.conclusions(conclusions(analysis, alpha))]
        for stem, (frame, index) in tables(analysis).items():
            write_table(frame, sub, stem, index)
            parts += [f"<h3>{stem.replace('_', ' ')}</h3>", page.table(frame, index)]
        parts += [
            page.figure(sub / f"{stem}.png", caption)
            for stem, caption in _figures(analysis, sub, alpha).items()
        ]
        sections.append(
            (name, f"{name} ({analysis.measure.direction} is better)", "\n".join(parts))
        )
    curves = []
    for block, frame in (traces or {}).items():
        path = folder / "convergence" / f"{safe_name(block)}.png"
        _save(figures.convergence(frame, objective, block), path)
        curves.append(page.figure(path, f"{block}: {objective}"))
    if curves:
        sections.append(("convergence", "convergence", "\n".join(curves)))
    summary = summarize(selection, analyses, options)
    text = console_summary(summary)
    (folder / "summary.json").write_text(json.dumps(plain(summary), indent=2, default=str))
    (folder / "summary.txt").write_text(text)
    (folder / "report.html").write_text(
        page.render("svmlab analysis", text, sections), encoding="utf-8"
    )
    return summary


def _figures(analysis: MeasureAnalysis, folder: Path, alpha: float) -> dict[str, str]:
    """Draw the figures of one measure into ``folder``; returns {file stem: caption}."""
    name = analysis.measure.name
    cd = analysis.critical_differences[alpha]["nemenyi"]
    title = f"{name}: mean ranks, Nemenyi CD = {cd:.3f} at alpha = {alpha:g}"
    drawn = {
        "cd_diagram": (
            figures.cd_diagram(analysis.mean_ranks, cd, title),
            f"{name}: critical-difference diagram, Nemenyi CD = {cd:.3f} at alpha = {alpha:g}",
        ),
        "rank_boxplot": (
            figures.rank_boxplot(analysis.ranks, name),
            f"{name}: ranks within blocks",
        ),
        "per_block": (figures.per_block(analysis.table, name), f"{name} per block"),
    }
    if analysis.profiled:
        ratios = profiles.ratios(analysis.costs)
        write_table(ratios, folder, "performance_ratios", index=True)
        drawn["performance_profile"] = (
            figures.profile(
                profiles.profile(ratios), f"ratio to the best {name} of the block", start=1.0
            ),
            f"{name}: performance profile (share of blocks within a factor tau of the best)",
        )
        drawn["data_profile"] = (
            figures.profile(profiles.profile(analysis.costs), f"budget: {name}"),
            f"{name}: data profile (share of blocks done within the budget)",
        )
    for stem, (fig, _) in drawn.items():
        _save(fig, folder / f"{stem}.png")
    return {stem: caption for stem, (_, caption) in drawn.items()}


def summarize(selection: Selection, analyses: list[MeasureAnalysis], options: Options) -> dict:
    """A JSON-ready digest: options, selection, and per measure the main statistics."""
    return {
        "source": selection.source,
        "n_rows": len(selection.long),
        "excluded_runs": selection.excluded,
        "confounds": selection.confounds,
        "options": {**asdict(options), "hypotheses": [h.spec for h in options.hypotheses]},
        "measures": {
            a.measure.name: {
                "direction": a.measure.direction,
                "rope": a.measure.rope,
                "rope_relative": a.measure.relative,
                "n_blocks": len(a.table),
                "treatments": list(map(str, a.table.columns)),
                "dropped_blocks": a.dropped,
                "mean_ranks": a.mean_ranks.sort_values().to_dict(),
                "friedman": a.friedman.as_dict(),
                "critical_differences": {f"{k:g}": v for k, v in a.critical_differences.items()},
                "pairwise": a.pairwise.drop(columns=["H0"]).to_dict(orient="records"),
                "control": None if a.control is None else a.control.to_dict(orient="records"),
                "profile": None
                if not a.profiled
                else {
                    "n_blocks": len(a.costs),
                    "fastest": profiles.share_within(profiles.ratios(a.costs), 1.0).to_dict(),
                    "done": profiles.share_within(a.costs, float("inf")).to_dict(),
                },
            }
            for a in analyses
        },
    }


def plain(value):
    """``value`` with NaN and infinite floats replaced by None, so that the JSON is standard."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def console_summary(summary: dict) -> str:
    """The summary as readable text."""
    options = summary["options"]
    lines = [f"source: {summary['source']} ({summary['n_rows']} rows)"]
    if summary["excluded_runs"]:
        lines.append(
            "excluded runs: "
            + ", ".join(f"{n} {status}" for status, n in summary["excluded_runs"].items())
        )
    alphas = [f"{a:g}" for a in options["alphas"]]
    for name, m in summary["measures"].items():
        f = m["friedman"]
        lines += [
            "",
            (
                f"== {name} ({m['direction']} is better): {m['n_blocks']} blocks, "
                f"{len(m['treatments'])} treatments, {options['aggregate']} over "
                "repetitions"
            ),
        ]
        if m["dropped_blocks"]:
            lines.append(
                "dropped blocks (missing treatments): "
                + "; ".join(f"{b}: {', '.join(t)}" for b, t in m["dropped_blocks"].items())
            )
        lines.append(
            "mean ranks (1 = best): "
            + ", ".join(f"{t} {r:.3f}" for t, r in m["mean_ranks"].items())
        )
        lines.append(
            f"Friedman chi2 = {f['chi2']:.4f} (tie-corrected {f['chi2_tied']:.4f}); "
            f"Iman-Davenport F({f['df1']}, {f['df2']}) from the tie-corrected chi2 = "
            f"{f['iman_davenport_f_tied']:.4f}, p = {f['iman_davenport_p_tied']:.4g}"
            + ("" if f["method"] == "iman-davenport" else " (approximation, not used)")
        )
        if f["method"] != "iman-davenport":
            lines.append(
                f"omnibus p = {f['p_value']:.4g} (Friedman permutation test, "
                f"{f['method']}: {m['n_blocks']} blocks are too few for the F "
                "approximation)"
            )
        if m["profile"]:
            lines.append(
                f"performance profile over {m['profile']['n_blocks']} blocks, share "
                "best / done: "
                + ", ".join(
                    f"{t} {m['profile']['fastest'][t]:.2f} / {m['profile']['done'][t]:.2f}"
                    for t in m["treatments"]
                )
            )
        lines.append(
            "Nemenyi CD: "
            + ", ".join(
                f"{v['nemenyi']:.3f} (alpha {a})" for a, v in m["critical_differences"].items()
            )
        )
        lines.append(
            f"Wilcoxon signed-rank, d = A - B ({options['zero_method']} zeros, "
            f"{options['correction']}-adjusted; H0: d symmetric about 0):"
        )
        for p in m["pairwise"]:
            z = (
                ""
                if p["z"] is None or (isinstance(p["z"], float) and math.isnan(p["z"]))
                else f", z = {p['z']:.3f}"
            )
            decisions = _decisions(p, alphas)
            lines.append(
                f"  {p['A']} vs {p['B']} ({p['alternative']}): W = {p['W']:g} "
                f"({p['method']}{z}), p = {p['p_value']:.4g}, adjusted "
                f"{p['p_adjusted']:.4g} [{decisions}]; r = {p['rank_biserial']:.3f}, "
                f"Hodges-Lehmann {p['hodges_lehmann']:.4g}"
                f"{_interval(p, options['confidence'])}; "
                f"posterior shares A better / equivalent (ROPE {p['rope']}) / B better "
                f"= {p[SHARES[0]]:.3f} / {p[SHARES[1]]:.3f} / {p[SHARES[2]]:.3f}"
            )
            lines.append(f"    H1: {p['H1']}")
        if m["control"]:
            lines.append(
                f"against the control {options['control']} (Holm-adjusted "
                "Bonferroni-Dunn on mean ranks, and Wilcoxon):"
            )
            lines += [
                f"  {c['A']} vs {c['B']}: p ranks {c['p_ranks_holm']:.4g}, p Wilcoxon "
                f"{c['p_wilcoxon_holm']:.4g} [{_decisions(c, alphas)}]"
                for c in m["control"]
            ]
    return "\n".join(lines) + "\n"


def _decisions(row: dict, alphas: list[str]) -> str:
    """``0.05:reject 0.1:not rejected``: a row's decision at each alpha."""
    return " ".join(
        f"{a}:{'reject' if row[f'decision@{a}'] == REJECT else 'not rejected'}" for a in alphas
    )


def _interval(p: dict, confidence: float) -> str:
    """', 95.2 % CI [low, high]' of a pairwise row, at the coverage it attains, which too few
    blocks keep below the level asked (then said, as R's wilcox.test says it)."""
    text = f", {100 * p['ci_coverage']:.1f} % CI [{p['ci_low']:.4g}, {p['ci_high']:.4g}]"
    if p["ci_coverage"] < confidence:
        text += f" ({100 * confidence:g} % is not attainable with so few blocks)"
    return text


def conclusions(analysis: MeasureAnalysis, alpha: float) -> list[str]:
    """What the tests of one measure say at level ``alpha``, in words."""
    f, name = analysis.friedman, analysis.measure.name
    rejected = f.p_value <= alpha
    test = (
        "Iman-Davenport (tie-corrected chi2)"
        if f.method == "iman-davenport"
        else f"Friedman permutation test ({f.method})"
    )
    lines = [
        f"{name}: {test} p = {f.p_value:.4g}: H0 'all treatments perform equally' "
        + ("rejected" if rejected else "not rejected")
        + f" at alpha = {alpha:g}."
    ]
    cd = (
        analysis.critical_differences[alpha]["nemenyi"]
        if alpha in analysis.critical_differences
        else posthoc.nemenyi_cd(*analysis.table.shape, alpha)
    )
    for row in analysis.nemenyi.itertuples():
        if abs(row.rank_difference) > cd:
            better, worse = (row.A, row.B) if row.rank_difference < 0 else (row.B, row.A)
            lines.append(
                f"Nemenyi: {better} ranks better than {worse} (rank difference "
                f"{abs(row.rank_difference):.3f} > CD {cd:.3f})."
            )
    for row in analysis.pairwise.to_dict(orient="records"):
        verdict = "rejected" if row["p_adjusted"] <= alpha else "not rejected"
        lines.append(
            f"Wilcoxon {row['A']} vs {row['B']}: H0 ({row['H0']}) {verdict} "
            f"(adjusted p = {row['p_adjusted']:.4g}); H1: {row['H1']}."
        )
    return lines


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def safe_name(name: str) -> str:
    """``name`` with every character but letters, digits, '-', '_' and '.' replaced by '_'."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))
