"""Hydra entry point for one training run: the composition root, with no numerics of its own.

compose config -> check it -> start an MLflow run -> load data -> fit -> evaluate -> log.
Run it as ``svmlab train [overrides]`` or ``python -m svmlab.train [overrides]``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import svmlab
from svmlab import data
from svmlab.config import build_estimator, check_typed_parts, register_schema
from svmlab.errors import SvmlabError
from svmlab.evaluation import check_trace_finite, evaluate
from svmlab.plotting import convergence_figure
from svmlab.tracking import Tracker, flatten

register_schema()


@dataclass
class RunContext:
    """What Hydra knows about this job beyond the config: choices, overrides, sweep position."""

    choices: dict = field(default_factory=dict)
    overrides: list = field(default_factory=list)
    sweep_dir: str | None = None
    job_num: int | None = None

    @classmethod
    def from_hydra(cls) -> RunContext:
        if not HydraConfig.initialized():
            return cls()
        hc = HydraConfig.get()
        multirun = hc.mode == RunMode.MULTIRUN
        return cls(
            choices=dict(hc.runtime.choices),
            overrides=list(hc.overrides.task),
            sweep_dir=str(Path(hc.sweep.dir).resolve()) if multirun else None,
            job_num=hc.job.num if multirun else None,
        )


def git_commit() -> str | None:
    """The commit of the svmlab source tree when svmlab runs from a git checkout.

    ``+dirty`` marks uncommitted changes; an installed copy (site-packages) has no commit, even
    inside a checkout's virtual environment.
    """
    source = Path(svmlab.__file__).resolve()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(source.parent), *args], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()

    try:
        git("ls-files", "--error-unmatch", source.name)
        commit, status = git("rev-parse", "HEAD"), git("status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if status else "")


def run_tags(cfg: DictConfig, context: RunContext, estimator) -> dict:
    return {
        "solver": context.choices.get("solver") or type(estimator).__name__,
        "dataset": cfg.dataset.name,
        "kernel": cfg.kernel.name,
        "seed": cfg.seed,
        "svmlab.version": svmlab.__version__,
        "svmlab.git_commit": git_commit(),
        "svmlab.sweep_dir": context.sweep_dir,
        "svmlab.job_num": context.job_num,
    }


def run(cfg: DictConfig, context: RunContext | None = None) -> str:
    """Train, evaluate and log one configuration; returns the MLflow run id."""
    context = context or RunContext()
    check_typed_parts(cfg)
    estimator = build_estimator(cfg)
    dataset_params = OmegaConf.to_container(cfg.dataset, resolve=True)
    data.validate(**dataset_params)
    tags = run_tags(cfg, context, estimator)
    run_name = cfg.tracking.run_name or f"{tags['solver']}-{tags['dataset']}-{tags['kernel']}-seed{cfg.seed}"

    tracking = cfg.tracking
    with Tracker(tracking.uri, tracking.experiment, run_name, tracking.flush_rows) as tracker:
        tracker.set_tags(tags)
        tracker.log_params(flatten(OmegaConf.to_container(cfg, resolve=True)))
        tracker.log_text(OmegaConf.to_yaml(cfg, resolve=True), "config/config.yaml")
        tracker.log_text(OmegaConf.to_yaml(context.overrides), "config/overrides.yaml")

        dataset = data.load(**dataset_params, seed=cfg.seed, data_dir=cfg.paths.data_dir,
                            cache_dir=cfg.paths.cache_dir)
        tracker.log_dataset(dataset)

        start = time.perf_counter()
        estimator.fit(dataset.X_train, dataset.y_train, callback=tracker.on_iteration)
        fit_time_s = time.perf_counter() - start
        tracker.flush()
        check_trace_finite(estimator.trace_)

        if hasattr(estimator, "converged_"):  # iterative solvers say whether they converged
            tracker.set_tags({"svmlab.converged": str(bool(estimator.converged_)).lower()})
        metrics = evaluate(estimator, dataset, fit_time_s)
        tracker.log_metrics(metrics, step=int(estimator.n_iter_))
        columns = estimator.trace_.columns()
        tracker.log_text(estimator.trace_.to_frame().to_csv(index=False), "trace/trace.csv")
        tracker.log_figure(convergence_figure(columns, run_name), "trace/convergence.png")
        if tracking.log_model:
            tracker.log_model(estimator, dataset.X_train[:5])

    print(f"run {tracker.run_id} FINISHED: {run_name}  "
          f"test_accuracy={metrics['test_accuracy']:.4f}  fit_time_s={fit_time_s:.3f}")
    print(f"open the MLflow UI on this store:  {tracker.ui_command}")
    return tracker.run_id


@hydra.main(config_path="pkg://svmlab.conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    try:
        run(cfg, RunContext.from_hydra())
    except SvmlabError as exc:  # a user's mistake: one clear line, not a traceback
        print(f"svmlab: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    sys.exit(main())
