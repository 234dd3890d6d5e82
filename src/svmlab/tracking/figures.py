"""Convergence figures: every objective-like trace column against iteration and against time."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def convergence_figure(columns: dict, title: str):
    """Two panels (against iteration, against elapsed seconds) of every trace column but time."""
    keys = [k for k in columns if k not in ("iteration", "time_s")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, x_key, x_label in ((axes[0], "iteration", "iteration"),
                               (axes[1], "time_s", "elapsed time [s]")):
        for key in keys:
            ax.plot(columns[x_key], columns[key], marker="." if len(columns[x_key]) < 50 else None,
                    label=key)
        ax.set_xlabel(x_label)
        ax.grid(True, alpha=0.3)
        if all((columns[k] > 0).all() for k in keys) and len(columns[x_key]) > 1:
            ax.set_yscale("log")
    axes[0].legend(fontsize="small")
    fig.suptitle(title)
    return fig
