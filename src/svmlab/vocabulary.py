"""The names of what a run records, in one place: its tags, its artifacts, and its metrics with
each one's kind and direction (higher or lower is better), and the facts of a measure that the
claims read (the value an accuracy cannot exceed, the constant classifier's rate beside it, what
a censored time or count is more than).

Standard library only, at the bottom of the layer order: every layer reads its names here, so
that a tag written by one layer and read by another is one name, not two literals.
"""

from __future__ import annotations

from dataclasses import dataclass

# Tags of every training run (what it is and how it ended).
ROLE_TAG = "svmlab.role"  # a run that is not a training run: sweep, study, analysis, report, ...
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
SOLVER_TAG = "solver"
DATASET_TAG = "dataset"
SEED_TAG = "seed"
DIGEST_TAG = "svmlab.config_sha256"  # the sha256 of the run's resolved config (resume)
WARM_START_TAG = "svmlab.warm_start"  # "true": the fit started from another fit's solution
CONVERGED_TAG = "svmlab.converged"
STOP_REASON_TAG = "svmlab.stop_reason"
STOPPING_RULE_TAG = "svmlab.stopping_rule"
FORMULATION_TAG = "svmlab.formulation"  # the formulation whose certificate the run carries
CERTIFICATE_TAG = "svmlab.certificate"
ERROR_TAG = "svmlab.error"
JOB_NUM_TAG = "svmlab.job_num"
VERSION_TAG = "svmlab.version"
GIT_COMMIT_TAG = "svmlab.git_commit"
DATA_UNVERIFIED_TAG = "svmlab.data_unverified"  # the dataset's checksum could not be checked
PROJECT_RUN_TAG = "svmlab.run_id"  # on an MLflow project's run: the training run it made

# Tags of a run's process (tracking.liveness judges by them whether it is gone).
HOST_TAG = "svmlab.host"
PID_TAG = "svmlab.pid"
PID_STARTED_TAG = "svmlab.pid_started"
HEARTBEAT_TAG = "svmlab.heartbeat"
SWEEP_DIR_TAG = "svmlab.sweep_dir"  # the sweep folder of a sweep's run or of one of its jobs
SLURM_JOB_TAG = "svmlab.slurm_job"  # <array>_<task> of a SLURM array task, else the job id

# Tags of a study and its trials.
STUDY_TAG = "svmlab.study"
STORAGE_TAG = "svmlab.study_storage"
TRIAL_TAG = "svmlab.trial"
TRIAL_STATE_TAG = "svmlab.trial_state"  # COMPLETE, PRUNED or FAIL, as Optuna has it
PRUNED_AT_TAG = "svmlab.pruned_at_step"  # the step of the last value reported to the pruner
PRUNED_FOLD_TAG = "svmlab.pruned_at_fold"  # the fold (from 0) being fitted or just scored
PRUNED_ITERATION_TAG = "svmlab.pruned_at_iteration"  # the trace's iteration, when pruned mid-fit
REFIT_TAG = "svmlab.refit_run_id"
REFIT_TRIAL_TAG = "svmlab.refit_trial"  # the trial whose config the refit trained

# Tags of a workflow's runs.
WORKFLOW_TAG = "svmlab.workflow"
WORKFLOW_SCALE_TAG = "svmlab.workflow.scale"
WORKFLOW_DIGEST_TAG = "svmlab.workflow.digest"  # the workflow's text, scale and sweep overrides

# Artifacts.
TRACE_PREFIX = "trace/"  # the artifacts and metric histories of the convergence trace
TRACE_ARTIFACT = TRACE_PREFIX + "trace.parquet"  # the whole convergence trace
CONVERGENCE_FIGURE = "trace/convergence.png"
REPORT_PAGE = "report.html"  # an analysis run's report

# The numbers of a run's dataset input (its profile) that the readers use.
TEST_SIZE = "n_test"

# Kinds of measure.
ACCURACY, RATE, TIME, ITERATIONS, COUNT, OBJECTIVE, GAP = (
    "accuracy",
    "rate",
    "time",
    "iterations",
    "count",
    "objective",
    "gap",
)
# Directions: which values of a measure are better.
HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Metric:
    """A metric a run logs: its kind, which values are better (None: neither, it describes the
    data), the value it cannot exceed with how close to it counts as at it (``ceiling``), and the
    metric of a constant classifier on the same data, which it is read against (``baseline``)."""

    name: str
    kind: str
    better: str | None
    ceiling: tuple[float, float] | None = None
    baseline: str | None = None


METRICS = {
    m.name: m
    for m in (
        # one test error in a thousand counts as at the ceiling: separable data
        Metric(
            "test_accuracy", ACCURACY, HIGHER, ceiling=(1.0, 1e-3), baseline="test_majority_rate"
        ),
        Metric("train_accuracy", ACCURACY, HIGHER),
        Metric("test_majority_rate", RATE, None),  # the accuracy of the majority-class classifier
        Metric("fit_time_s", TIME, LOWER),  # the solver's own clock
        Metric("predict_time_s", TIME, LOWER),
        Metric("compile_time_s", TIME, LOWER),
        Metric("certificate_time_s", TIME, LOWER),
        Metric("n_iter", ITERATIONS, LOWER),
        Metric("n_passes", ITERATIONS, LOWER),  # passes over the data, a solver's cost in its paper
        Metric("n_support", COUNT, LOWER),
        Metric("kernel_gamma", RATE, None),  # a gamma rule's value on the data
    )
}

#: Metrics and measures named by a prefix and a formulation or target (``objective_hinge_l2``,
#: ``rel_gap_hinge_l2``, ``time_to_gap_1e-3``): the kind and direction of each prefix. A run's
#: per-formulation names are built in ``svmlab.estimator.formulations``; the measures to a target
#: are derived from the trace by ``svmlab.analysis.precision``.
PREFIXES = {
    "objective_": (OBJECTIVE, LOWER),
    "primal_": (OBJECTIVE, None),
    "dual_": (OBJECTIVE, None),
    "rel_gap_": (GAP, None),
    "gap_": (GAP, None),
    "time_to_gap_": (TIME, LOWER),
    "iters_to_gap_": (ITERATIONS, LOWER),
    "time_to_obj_": (TIME, LOWER),
    "iters_to_obj_": (ITERATIONS, LOWER),
    "time_to_acc_": (TIME, LOWER),
    "iters_to_acc_": (ITERATIONS, LOWER),
}
#: The measures to a target (``svmlab.analysis.precision``).
TO_TARGET = tuple(p for p in PREFIXES if "_to_" in p)
#: Measures of a run's own stop: a run stopped by a cap did not finish, so they are censored.
OWN_STOP = ("fit_time_s", "n_iter", "n_passes")
#: What a censored measure (a target never reached) is more than, by its kind: the run's own
#: time, or for an iteration count its number of iterations.
FLOORS = {TIME: "fit_time_s", ITERATIONS: "n_iter"}


def _facts(name: str) -> tuple[str | None, str | None]:
    if name in METRICS:
        return METRICS[name].kind, METRICS[name].better
    prefix = next((p for p in PREFIXES if name.startswith(p)), None)
    if prefix:
        return PREFIXES[prefix]
    return (TIME, None) if name.endswith("time_s") else (None, None)


def kind(name: str) -> str | None:
    """The kind of a metric or measure (ACCURACY, TIME, ...), None when unknown."""
    return _facts(name)[0]


def direction(name: str) -> str | None:
    """HIGHER or LOWER: which values of a metric or measure are better; None when it has no
    known direction."""
    return _facts(name)[1]


def directed() -> list[str]:
    """The metrics whose direction is known, and the prefixes of those named by one (``*``)."""
    return [
        *(m.name for m in METRICS.values() if m.better),
        *(f"{p}*" for p, (_, better) in PREFIXES.items() if better),
    ]


def floor(name: str) -> str:
    """The metric a censored value of measure ``name`` is more than (FLOORS; time by default)."""
    return FLOORS.get(kind(name), FLOORS[TIME])


def ceiling(name: str) -> tuple[float, float] | None:
    """The value metric ``name`` cannot exceed and how close to it counts as at it, or None."""
    return METRICS[name].ceiling if name in METRICS else None


def baseline(name: str) -> str | None:
    """The metric of a constant classifier that metric ``name`` is read against, or None."""
    return METRICS[name].baseline if name in METRICS else None
