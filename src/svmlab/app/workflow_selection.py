"""The selection step of a workflow (its ``select`` block), run before the sweep.

For each dataset of the sweep, one study (``tuning.spec.StudySpec``, run in this process by
``app.tune.run`` as ``svmlab tune`` runs its own, its parent run nested under the workflow's
outer run) trains every point of the grid once, with Optuna's grid
sampler and no pruner, on one seeded stratified hold-out split of the training set, with the
sweep's config and the selecting overrides (``solver=cvm``); unless the block says ``warm_start:
false``, in increasing C, each fit starting from the previous solution where the solver can
(a warm-started study: the scores are a selection's result, its times are not). The
dataset's sweep then trains with the values of the best validation score; ties go to the
smallest values, in the order of the grid's keys.

A study is named by the workflow, the scale, the dataset and a digest of what it trains (its
overrides, grid, split and metric): running the workflow again finds it. A study whose parent run
FINISHED is read back from its Optuna storage and trains nothing; an interrupted one continues
(``svmlab tune`` resumes: finished trials are kept, an interrupted or dead trial's point is
trained again). Trials run one at a time: several workers would train the grid's last points
twice (Optuna's grid sampler re-runs unfinished points once every point has started).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from dataclasses import dataclass

from hydra.core.override_parser.overrides_parser import OverridesParser

from svmlab.app import tune
from svmlab.app.config import search_space
from svmlab.app.config.overrides import override_key, override_value, replaced
from svmlab.errors import ConfigError
from svmlab.tuning.spec import PATH_KEY, StudySpec, grid
from svmlab.workflows.spec import Select, Workflow

#: overrides of the sweep that a study does not take: where and how the sweep runs
SWEEP_ONLY = ("hydra/launcher", "hydra.launcher", "hydra.sweep", "resume")


@dataclass(frozen=True)
class Selected:
    """The values a study chose for one dataset, their validation score, and the study."""

    dataset: str
    values: dict
    score: float
    study: str

    def overrides(self) -> list[str]:
        """The overrides of this dataset's sweep."""
        return [
            f"dataset={self.dataset}",
            *(search_space.as_override(k, v) for k, v in self.values.items()),
        ]


def _single(arguments: list[str]) -> list[str]:
    """The single-valued overrides of the sweep, but not where or how it runs."""
    try:
        parsed = OverridesParser.create().parse_overrides(arguments)
    except Exception as exc:  # Hydra's grammar error, a readable sentence
        raise ConfigError(
            f"cannot parse the sweep's overrides: {str(exc).splitlines()[0]}"
        ) from exc
    return [
        a
        for a, o in zip(arguments, parsed)
        if not o.is_sweep_override() and not override_key(a).startswith(SWEEP_ONLY)
    ]


def datasets(arguments: list[str]) -> list[str]:
    """The datasets the sweep of ``arguments`` trains on, in order: its last ``dataset`` override
    after the preset's ``hydra.sweeper.params`` (as Hydra's basic sweeper reads them), else the
    config's dataset."""
    parser = OverridesParser.create()
    _, choices, params = tune.compose_config(_single(arguments))
    found = [choices["dataset"]]
    for override in parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + arguments):
        if override.get_key_element() == "dataset":
            found = (
                list(override.sweep_string_iterator())
                if override.is_sweep_override()
                else [override.get_value_element_as_str()]
            )
    return found


def study_overrides(select: Select, arguments: list[str], dataset: str) -> list[str]:
    """The overrides of a dataset's study: the sweep's single-valued overrides (not where or
    how it runs), the selecting overrides, the dataset, the split's seed, none of the preset's
    sweep (``hydra.sweeper.params=null``), then the grid."""
    fixed = replaced(
        _single(arguments),
        [
            *select.overrides,
            f"dataset={dataset}",
            f"seed={select.seed}",
            "hydra.sweeper.params=null",
        ],
    )
    return fixed + [f"{key}={values}" for key, values in select.grid.items()]


def study(
    workflow: Workflow, scale: str, arguments: list[str], dataset: str, storage: str
) -> StudySpec:
    """The dataset's study: every point of the grid once, on one hold-out split, no refit."""
    select = workflow.select
    overrides = study_overrides(select, arguments, dataset)
    identity = [o for o in overrides if not o.startswith("tracking.uri=")]
    warm = select.warm_start and _warm_startable(overrides)
    digest = hashlib.sha256(
        "\n".join(
            [*identity, str(select.validation), select.metric, *(["--warm-start"] if warm else [])]
        ).encode()
    ).hexdigest()[:8]
    spec = tune.spec_of(
        overrides,
        name=f"workflow-{workflow.name}-{scale}-select-{dataset}-{digest}",
        metric=select.metric,
        validation=select.validation,
        sampler="grid",
        pruner="none",
        storage=storage,
        warm_start=warm,
        refit=False,
    )
    return dataclasses.replace(spec, trials=math.prod(map(len, grid(spec.space).values())))


def _warm_startable(overrides: list[str]) -> bool:
    """Whether the study's solver can start from another fit and its grid has a path in C."""
    from svmlab.app.config.schema import build_estimator

    space, fixed = search_space.parse(overrides)
    if PATH_KEY not in space:
        return False
    cfg, _ = tune.trial_config(tuple(fixed), search_space.endpoints(space)[0])
    return build_estimator(cfg).warm_startable


def check(workflow: Workflow, scale: str, arguments: list[str], storage: str) -> None:
    """Refuse a selection that cannot run (an empty or infinite grid, a parameter the solver does
    not have, an unknown metric or dataset) before any run is created: ConfigError, DataError."""
    tune.prepare(study(workflow, scale, arguments, datasets(arguments)[0], storage))


def best(found, metric: str) -> tuple[dict, float]:
    """The values and the score of the study's best trial (``best_trial``: ties go to the
    smallest values)."""
    from svmlab.tuning.study import best_trial

    chosen = best_trial(found, metric)
    return dict(chosen.params), float(chosen.value)


def run(
    workflow: Workflow, scale: str, arguments: list[str], storage: str, outer_run_id: str
) -> tuple[list[Selected], int]:
    """Run (or read back) every dataset's study; (the selections so far, and 0, or the exit
    status of the study that did not finish: the workflow stops there)."""
    from svmlab.app.launch.sweep import time_left
    from svmlab.tracking.study import StudyRun

    chosen, names, started = [], datasets(arguments), time.time()
    for number, dataset in enumerate(names):
        print(
            f"select {dataset}: dataset {number + 1} of {len(names)}"
            + time_left(started, number, len(names)),
            flush=True,
        )
        spec = study(workflow, scale, arguments, dataset, storage)
        uri = override_value(list(spec.fixed), "tracking.uri")
        experiment = override_value(list(spec.fixed), "tracking.experiment")
        done = StudyRun(uri, experiment, spec.name).finished()
        found = _load(spec.name, storage) if done else None
        if found is None:
            status = tune.run(spec, parent_run_id=outer_run_id, command="svmlab workflow")
            if status:
                return chosen, status
            found = _load(spec.name, storage)
        else:
            print(f"select {dataset}: study {spec.name} finished before", flush=True)
        values, score = best(found, workflow.select.metric)
        chosen.append(Selected(dataset, values, score, spec.name))
    return chosen, 0


def _load(name: str, storage: str):
    """The study ``name`` of the storage, or None when it has no complete trial (or is gone)."""
    import optuna
    from optuna.trial import TrialState

    from svmlab.tuning.study import storage_url

    try:
        found = optuna.load_study(study_name=name, storage=storage_url(storage))
    except KeyError:  # not in this storage
        return None
    return found if found.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) else None
