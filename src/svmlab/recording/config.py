"""What a run records before its fit, from the resolved config as plain values (a nested dict):
the flattened config as params, the run's tags (with the config's digest), the config and its
overrides as YAML texts; and the store's prelude, said and done once before a command's runs."""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

import svmlab
from svmlab.tracking.record import RunRecord
from svmlab.vocabulary import DIGEST_TAG, GIT_COMMIT_TAG, JOB_NUM_TAG, SWEEP_DIR_TAG, VERSION_TAG

#: the tracking keys that say how the store is used, not what a run computes
STORE_KEYS = ("uri", "stale_after_s", "new_folder", "wait_s", "log_figure")


def config_digest(tree: Mapping) -> str:
    """sha256 of the resolved config, without ``resume`` and the tracking keys that say how the
    store is used (``STORE_KEYS``).

    Two runs with the same digest computed the same thing and were filed in the same
    experiment; where the store lives (the URI), whether a sweep resumes, when a silent run
    counts as dead, how long a store is waited for and whether the convergence figure was drawn
    (`svmlab runs plot` draws it any time) do not count.
    """
    tree = {k: v for k, v in tree.items() if k != "resume"}
    tree["tracking"] = {k: v for k, v in tree["tracking"].items() if k not in STORE_KEYS}
    return hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest()


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of a nested mapping under its dotted key (lists keep their JSON form)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat |= flatten(value, dotted + ".")
        else:
            flat[dotted] = json.dumps(value) if isinstance(value, (list, dict)) else value
    return flat


#: what YAML 1.1 reads as a boolean: such a string is quoted, as are numbers' spellings
YAML_BOOLS = {
    f(word)
    for word in ("y", "yes", "n", "no", "true", "false", "on", "off")
    for f in (str.lower, str.capitalize, str.upper)
}


class _Dumper(yaml.Dumper):
    """YAML as OmegaConf writes a config: a string that would read back as a boolean or a
    number (a key ``n``, a value ``'1.0'``) in single quotes. Written here because the recording
    layer takes plain values and may not import OmegaConf (Hydra's, docs/architecture.md)."""


def _quoted_if_ambiguous(dumper: yaml.Dumper, text: str):
    try:
        float(text)
        ambiguous = True
    except ValueError:
        ambiguous = text in YAML_BOOLS
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="'" if ambiguous else None)


_Dumper.add_representer(str, _quoted_if_ambiguous)


def as_yaml(value) -> str:
    """A config or a list of overrides as YAML, in the order of its keys."""
    return yaml.dump(
        value, Dumper=_Dumper, default_flow_style=False, allow_unicode=True, sort_keys=False
    )


def config_record(
    tree: Mapping,
    overrides: list[str],
    solver: str,
    sweep_dir: str | None = None,
    job_num: int | None = None,
) -> RunRecord:
    """The flattened config (params), the run's tags (``solver`` names the solver: its config
    group's option; a sweep's folder and the job's number where it is one) and the config and
    its overrides as texts (``config/config.yaml``, ``config/overrides.yaml``)."""
    tags = {
        "solver": solver,
        "dataset": tree["dataset"]["name"],
        "kernel": tree["kernel"]["name"],
        "seed": tree["seed"],
        VERSION_TAG: svmlab.__version__,
        GIT_COMMIT_TAG: git_commit(),
        SWEEP_DIR_TAG: sweep_dir,
        JOB_NUM_TAG: job_num,
        DIGEST_TAG: config_digest(tree),
    }
    return RunRecord(
        params=flatten(tree),
        tags=tags,
        texts={
            "config/config.yaml": as_yaml(tree),
            "config/overrides.yaml": as_yaml(list(overrides)),
        },
    )


def run_name(record: RunRecord) -> str:
    """A run's default name: ``<solver>-<dataset>-<kernel>-seed<seed>``."""
    tags = record.tags
    return f"{tags['solver']}-{tags['dataset']}-{tags['kernel']}-seed{tags['seed']}"


@functools.cache
def git_commit() -> str | None:
    """The commit of the svmlab source: of the git checkout svmlab runs from, else the one an
    installed copy was built from (:func:`installed_commit`); None when neither is known.

    ``+dirty`` marks uncommitted changes. Asked once per process (the code a process runs does
    not change once imported), not once per job of a sweep.
    """
    source = Path(svmlab.__file__).resolve()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(source.parent), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()

    try:
        git("ls-files", "--error-unmatch", source.name)
        commit, status = git("rev-parse", "HEAD"), git("status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return installed_commit()
    return commit + ("+dirty" if status else "")


def installed_commit() -> str | None:
    """The commit an installed copy was built from: ``svmlab/COMMIT``, written by the build
    (setup.py), else the commit pip recorded for an install from a repository URL
    (``direct_url.json``)."""
    from importlib.metadata import PackageNotFoundError, distribution

    stamp = Path(svmlab.__file__).with_name("COMMIT")
    if stamp.is_file():
        return stamp.read_text().strip() or None
    try:
        recorded = json.loads(distribution("svmlab").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return None
    return recorded.get("vcs_info", {}).get("commit_id")


def prelude(tracking: Mapping) -> None:
    """Before a command's first run: ``announce`` and ``reap``. ``tracking``: the config's
    tracking section."""
    announce(tracking)
    reap(tracking)


def announce(tracking: Mapping) -> None:
    """Say that a new SQLite store is about to be created (or refuse a missing folder, unless
    ``new_folder``): before anything opens the store."""
    from svmlab.tracking.existing import announce_new_store

    announce_new_store(tracking["uri"], tracking["new_folder"])


def reap(tracking: Mapping) -> None:
    """End the runs of the experiment whose process is gone (after a command's own runs that
    continue, such as a study's parent, are this process's)."""
    from svmlab.tracking.liveness import reap_on_start

    reap_on_start(tracking["uri"], tracking["experiment"], tracking["stale_after_s"])
