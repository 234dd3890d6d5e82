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
import warnings

from omegaconf import DictConfig, OmegaConf, open_dict

from svmlab.errors import ConfigError, SvmlabError

SHOWN_JOBS = 8  # a problem of more jobs names the first ones
CHUNKS_PER_WORKER = 4  # the jobs checked in worker processes: a few chunks each, for balance
_CHECKED: set[tuple[str, ...]] = set()  # the jobs this process checked (unchecked)

# conf/hydra/launcher/<name>.yaml extends the launcher plugin's schema of the same name, so its
# keys are checked against that schema; Hydra 1.3 does that but warns on every composition (in
# every process that composes: the launching one, the workers that check a sweep's jobs).
warnings.filterwarnings(
    "ignore", message=r"\s*'hydra/launcher/\w+' is validated against ConfigStore"
)


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
    if not str(sweeper.get("_target_", "")).endswith(("BasicSweeper", ".CheckedSweeper")):
        return None
    params = [f"{k}={v}" for k, v in unresolved(sweeper.get("params") or {}).items()]
    hydra = GlobalHydra.instance()
    loader = hydra.config_loader() if hydra.is_initialized() else None  # for glob() sweeps
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(
        params + unresolved(config.hydra.overrides.task)
    )
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def check_jobs(config: DictConfig) -> tuple[int | None, list[int]]:
    """Compose and check every job of the sweep; ConfigError with one line per distinct
    problem (and the jobs it hits) if any job would be refused. Returns the number of jobs
    (None where the sweeper is not Hydra's basic one) and the worker processes that checked
    them: with the joblib launcher the jobs are composed and checked in its workers
    (``svmlab.app.launch.workers``), else here (no worker)."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.singleton import Singleton

    from svmlab.app.launch import workers

    jobs = job_overrides(config) if GlobalHydra.instance().is_initialized() else None
    if not jobs:
        return None, []
    name, hydra_overrides = config.hydra.job.config_name, unresolved(config.hydra.overrides.hydra)
    numbered = list(enumerate(jobs))
    pool = workers.parallel(workers.joblib_arguments(config))
    pids: set[int] = set()
    if pool is None:
        checked = check_chunk(name, hydra_overrides, numbered)
    else:
        from joblib import delayed, effective_n_jobs

        state = Singleton.get_state()  # Hydra's: the config loader and the registered schemas
        count = min(len(numbered), effective_n_jobs(pool.n_jobs) * CHUNKS_PER_WORKER)
        chunks = [numbered[i::count] for i in range(count)]
        done = pool(
            delayed(check_in_worker)(name, hydra_overrides, chunk, state, config.tracking.uri)
            for chunk in chunks
        )
        pids = {pid for pid, _ in done}
        checked = [c for _, chunk in done for c in chunk]
    problems: dict[str, list[tuple[int, list[str]]]] = {}
    datasets: dict[str, list[tuple[int, list[str]]]] = {}
    for num, problem, dataset in sorted(checked, key=lambda c: c[0]):
        if problem:
            problems.setdefault(problem, []).append((num, jobs[num]))
        else:
            datasets.setdefault(dataset, []).append((num, jobs[num]))
    from svmlab import data

    for dataset, hit in datasets.items():
        try:
            data.prepare(**json.loads(dataset))
        except SvmlabError as exc:
            problems.setdefault(str(exc), []).extend(hit)
    if problems:
        raise ConfigError(
            "\n".join(f"{problem} ({_jobs(hit)})" for problem, hit in problems.items())
        )
    _CHECKED.clear()
    _CHECKED.update(tuple(job) for job in jobs)
    return len(jobs), sorted(pids)


def check_in_worker(
    config_name: str,
    hydra_overrides: list[str],
    jobs: list[tuple[int, list[str]]],
    hydra_state: dict,
    uri: str | None,
) -> tuple[int, list]:
    """:func:`check_chunk` in a worker process, with Hydra's state in the launching process
    (``hydra_state``): (the worker's pid, the list). The worker then starts importing the
    training path for the jobs it will run, and the code that opens their store (``uri``)."""
    from hydra.core.singleton import Singleton

    from svmlab.app.launch.workers import warm_in_background

    Singleton.set_state(hydra_state)
    checked = check_chunk(config_name, hydra_overrides, jobs)
    return warm_in_background(uri), checked


def check_chunk(
    config_name: str, hydra_overrides: list[str], jobs: list[tuple[int, list[str]]]
) -> list[tuple[int, str | None, str | None]]:
    """Compose and check ``jobs`` (numbered overrides): for each, its number and either the
    problem that refuses it or its dataset (the parameters ``data.prepare`` takes, as JSON)."""
    from hydra import compose
    from hydra.core.hydra_config import HydraConfig

    from svmlab.app.config.schema import checked_estimator, composition_error_line

    checked = []
    launching = HydraConfig.instance().cfg  # the job's own while it is checked, as it will run
    for num, job in jobs:
        problem = dataset = None
        try:
            cfg = compose(config_name, hydra_overrides + job, return_hydra_config=True)
            with open_dict(cfg):
                cfg.hydra.job.num = cfg.hydra.job.id = num
            HydraConfig.instance().set_config(cfg)
            checked_estimator(cfg, cfg.hydra.runtime.choices.get("dataset"))
            where = {"data_dir": cfg.paths.data_dir, "cache_dir": cfg.paths.cache_dir}
            dataset = json.dumps(
                OmegaConf.to_container(cfg.dataset, resolve=True) | where, sort_keys=True
            )
        except SvmlabError as exc:
            problem = str(exc)
        except Exception as exc:
            problem = composition_error_line(exc, job)
            if problem is None:
                raise
        finally:
            HydraConfig.instance().cfg = launching
        checked.append((num, problem, dataset))
    return checked


def unchecked(batch) -> list:
    """The jobs of ``batch`` (overrides) that this process's sweep did not compose and check
    (all of them in a sweep without svmlab's callback)."""
    return [job for job in batch if tuple(job) not in _CHECKED]


def _jobs(hit: list[tuple[int, list[str]]]) -> str:
    """``job #0: solver=libsvm seed=-1``, or ``3 jobs: #0, #2, #5``."""
    if len(hit) == 1:
        num, job = hit[0]
        return f"job #{num}: {' '.join(job)}"
    return (
        f"{len(hit)} jobs: "
        + ", ".join(f"#{num}" for num, _ in hit[:SHOWN_JOBS])
        + (", ..." if len(hit) > SHOWN_JOBS else "")
    )
