"""A sweep's jobs checked before the sweep creates anything.

Every job's config is composed with Hydra's compose API from the sweep's override combinations
(the basic sweeper's, as it will launch them) and goes through the checks of a single run
(`svmlab.app.config.schema.checked_estimator`); each distinct dataset of the sweep is then made
available once (found or downloaded, verified: `svmlab.data.prepare`). A sweep with a problem
stops before its parent run, its store or its folder exists, with one line per distinct
problem naming the jobs it hits.
"""

from __future__ import annotations

import json

from omegaconf import DictConfig, OmegaConf, open_dict

from svmlab.errors import ConfigError, SvmlabError

SHOWN_JOBS = 8  # a problem of more jobs names the first ones


def unresolved(node):
    """Overrides as written: ``a=${hydra:job.num}`` is the job's to resolve, not the sweep's."""
    return OmegaConf.to_container(node, resolve=False) if OmegaConf.is_config(node) else node


def job_overrides(config: DictConfig) -> list[list[str]] | None:
    """The overrides of every job Hydra's basic sweeper makes of the sweep's ``config``, in
    job order (None for another sweeper, whose jobs are known only as it runs)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    sweeper = config.hydra.sweeper
    if not str(sweeper.get("_target_", "")).endswith("BasicSweeper"):
        return None
    params = [f"{k}={v}" for k, v in unresolved(sweeper.get("params") or {}).items()]
    hydra = GlobalHydra.instance()
    loader = hydra.config_loader() if hydra.is_initialized() else None  # for glob() sweeps
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(
        params + unresolved(config.hydra.overrides.task))
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def check_jobs(config: DictConfig) -> int | None:
    """Compose and check every job of the sweep; ConfigError with one line per distinct
    problem (and the jobs it hits) if any job would be refused. Returns the number of jobs
    (None where the sweeper is not Hydra's basic one)."""
    from hydra import compose
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    from svmlab.app.config.schema import checked_estimator, composition_error_line

    jobs = job_overrides(config) if GlobalHydra.instance().is_initialized() else None
    if not jobs:
        return None
    hydra_overrides = unresolved(config.hydra.overrides.hydra)
    problems: dict[str, list[tuple[int, list[str]]]] = {}
    datasets: dict[str, list[tuple[int, list[str]]]] = {}
    launching = HydraConfig.instance().cfg  # the job's own while it is checked, as it will run
    for num, job in enumerate(jobs):
        try:
            cfg = compose(config.hydra.job.config_name, hydra_overrides + job,
                          return_hydra_config=True)
            with open_dict(cfg):
                cfg.hydra.job.num = cfg.hydra.job.id = num
            HydraConfig.instance().set_config(cfg)
            checked_estimator(cfg, cfg.hydra.runtime.choices.get("dataset"))
            where = {"data_dir": cfg.paths.data_dir, "cache_dir": cfg.paths.cache_dir}
            dataset = json.dumps(OmegaConf.to_container(cfg.dataset, resolve=True) | where,
                                 sort_keys=True)
        except SvmlabError as exc:
            problem = str(exc)
        except Exception as exc:
            problem = composition_error_line(exc, job)
            if problem is None:
                raise
        else:
            datasets.setdefault(dataset, []).append((num, job))
            continue
        finally:
            HydraConfig.instance().cfg = launching
        problems.setdefault(problem, []).append((num, job))
    from svmlab import data

    for dataset, hit in datasets.items():
        try:
            data.prepare(**json.loads(dataset))
        except SvmlabError as exc:
            problems.setdefault(str(exc), []).extend(hit)
    if problems:
        raise ConfigError("\n".join(f"{problem} ({_jobs(hit)})"
                                    for problem, hit in problems.items()))
    return len(jobs)


def _jobs(hit: list[tuple[int, list[str]]]) -> str:
    """``job #0: solver=libsvm seed=-1``, or ``3 jobs: #0, #2, #5``."""
    if len(hit) == 1:
        num, job = hit[0]
        return f"job #{num}: {' '.join(job)}"
    return (f"{len(hit)} jobs: " + ", ".join(f"#{num}" for num, _ in hit[:SHOWN_JOBS])
            + (", ..." if len(hit) > SHOWN_JOBS else ""))
