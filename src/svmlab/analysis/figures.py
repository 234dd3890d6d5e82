"""Figures of an analysis: critical-difference diagram, rank box plots, per-block comparison,
convergence curves overlaid per block, and performance and data profiles."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from svmlab.analysis.posthoc import nemenyi_groups


def cd_diagram(mean_ranks: pd.Series, cd: float, title: str = ""):
    """Demšar's diagram: treatments on the mean-rank axis (1 = best, on the left), a bar of
    length CD, and thick lines joining groups whose ranks differ by less than CD."""
    k = len(mean_ranks)
    ordered = mean_ranks.sort_values()
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.35 * k))
    ax.set_xlim(1 - 0.3, k + 0.3)
    half = (k + 1) // 2
    ax.set_ylim(-(half + 1), 2.2)
    ax.axis("off")
    ax.hlines(0, 1, k, color="black", lw=1)
    for r in range(1, k + 1):
        ax.vlines(r, 0, 0.25, color="black", lw=1)
        ax.text(r, 0.45, str(r), ha="center", va="bottom")
    ax.plot([1, 1 + cd], [1.5, 1.5], color="black", lw=2)
    ax.text(1 + cd / 2, 1.65, f"CD = {cd:.3f}", ha="center", va="bottom")
    for i, (name, rank) in enumerate(ordered.items()):
        left = i < half
        y = -(i + 1.5) if left else -(k - i + 0.5)
        x_text = 1 - 0.25 if left else k + 0.25
        ax.plot([rank, rank, x_text], [0, y, y], color="black", lw=0.8)
        ax.text(x_text, y, f"{name} ({rank:.2f})", ha="right" if left else "left", va="center")
    for j, group in enumerate(nemenyi_groups(mean_ranks, cd)):
        y = -0.6 - 0.3 * j
        ax.plot(
            [mean_ranks[group[0]] - 0.03, mean_ranks[group[-1]] + 0.03],
            [y, y],
            color="tab:red",
            lw=3,
        )
    ax.set_title(title)
    return fig


def rank_boxplot(ranks: pd.DataFrame, title: str = ""):
    """Distribution over the blocks of each treatment's rank (1 = best)."""
    order = ranks.mean().sort_values().index
    fig, ax = plt.subplots(figsize=(1.5 + 1.0 * len(order), 4))
    ax.boxplot([ranks[t] for t in order], tick_labels=list(order))
    ax.plot(range(1, len(order) + 1), ranks[order].mean(), "D", color="tab:red", label="mean rank")
    ax.set_ylabel("rank within block (1 = best)")
    ax.invert_yaxis()
    ax.legend(fontsize="small")
    ax.set_title(title)
    return fig


def per_block(values: pd.DataFrame, measure: str, title: str = ""):
    """The measure of every treatment on every block (one row per block)."""
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.3 * len(values)))
    y = np.arange(len(values))
    markers = "osD^vP*Xh<>"
    for i, treatment in enumerate(values.columns):
        ax.plot(values[treatment], y, markers[i % len(markers)], label=str(treatment), alpha=0.8)
    ax.set_yticks(y, [str(b) for b in values.index])
    ax.set_xlabel(measure)
    positive = (values.to_numpy() > 0).all()
    if positive and values.to_numpy().max() / values.to_numpy().min() > 100:
        ax.set_xscale("log")
    ax.grid(True, axis="x", alpha=0.3)
    ax.margins(y=0.15)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(title)
    return fig


def convergence(traces: pd.DataFrame, objective: str, block: str):
    """Objective against iteration and against time, one colour per treatment, every repetition
    drawn (``traces``: columns treatment, run_id, iteration, time_s, value)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colours = dict(zip(sorted(traces["treatment"].unique()), plt.cm.tab10.colors * 10))
    for (treatment, _), run in traces.groupby(["treatment", "run_id"], sort=True):
        labelled = treatment in colours and not any(
            line.get_label() == treatment for line in axes[0].lines
        )
        for ax, x in ((axes[0], "iteration"), (axes[1], "time_s")):
            ax.plot(
                run[x],
                run["value"],
                color=colours[treatment],
                marker="o" if len(run) < 3 else None,
                lw=1,
                label=treatment if labelled else "_nolegend_",
            )
    for ax, label in ((axes[0], "iteration"), (axes[1], "solver time [s]")):
        ax.set_xlabel(label)
        ax.set_ylabel(objective)
        ax.grid(True, alpha=0.3)
        if (traces["value"] > 0).all() and len(traces) > 1:
            ax.set_yscale("log")
    axes[0].legend(fontsize="small")
    fig.suptitle(f"{block}: {objective}")
    return fig


def profile(
    curves: dict[str, tuple[np.ndarray, np.ndarray]],
    xlabel: str,
    title: str = "",
    start: float | None = None,
):
    """Step functions of a performance or data profile (``profiles.profile``): the share of
    blocks within x, x on a log scale; ``start`` is where every curve begins (1 for ratios)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    finite = np.concatenate([x for x, _ in curves.values()] or [np.ones(1)])
    low = start if start is not None else finite.min() / 1.5
    high = max(finite.max(), low) * 2
    markers = "osD^vP*Xh<>"
    for i, (treatment, (x, share)) in enumerate(curves.items()):
        xs = np.concatenate([[low], x, [high]])
        ys = np.concatenate([[0.0], share, [share[-1] if len(share) else 0.0]])
        ax.step(
            xs,
            ys,
            where="post",
            label=treatment,
            marker=markers[i % len(markers)],
            markevery=list(range(1, len(xs) - 1)),
            lw=1.5,
        )
    ax.set_xscale("log", base=2 if start == 1 else 10)
    ax.set_xlim(low, high)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of blocks")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    ax.set_title(title)
    return fig
