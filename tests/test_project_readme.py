"""The README's path for a newcomer, run as written: quick start, a sweep, the analyses, the
report and the MLflow project's analysis, in order, in a fresh copy of the repository (slow)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # svmlab and mlflow of the test environment
README = (ROOT / "README.md").read_text()
LIMIT_S = 1200  # a safety net for a loaded machine, not a measure

# In the README's order. The quick start's `pip install .` is the test environment's install;
# the MLflow project runs in that environment (--env-manager local) instead of building its own.
COMMANDS = [
    "svmlab train",
    "svmlab train -m solver=alm_gap,liblinear,libsvm dataset=heart_scale,diabetes_scale seed=0,1",
    "svmlab analyze -e svmlab --measure test_accuracy --measure fit_time_s --control libsvm",
    "svmlab report -e svmlab",
    'svmlab analyze -m time_to_gap_1e-3 -H "alm_gap<libsvm"',
    "mlflow run . -e analyze -P control=libsvm",
]
IGNORED = shutil.ignore_patterns(
    ".venv",
    ".git",
    "build",
    "dist",
    "mlruns",
    "mlflow.db*",
    "outputs",
    "multirun",
    "__pycache__",
    "*.egg-info",
)


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.timeout(2 * LIMIT_S)  # six commands, some minutes each on a loaded machine
def test_the_readme_commands_work_in_order_in_a_fresh_copy(tmp_path, shared_libsvm):
    for command in COMMANDS:
        assert command in README, f"the README no longer says: {command}"
    copy = tmp_path / "svmlab"
    shutil.copytree(ROOT, copy, ignore=IGNORED)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLFLOW_") and k != "SVMLAB_DATA_DIR"
    }
    env |= {
        "PATH": f"{BIN}{os.pathsep}{env['PATH']}",
        "SVMLAB_DATA_DIR": str(shared_libsvm),
        "SVMLAB_CACHE_DIR": str(tmp_path / "cache"),
    }
    printed = {}
    for command in COMMANDS:
        local = command + (" --env-manager local" if command.startswith("mlflow run") else "")
        done = subprocess.run(
            ["bash", "-c", local],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
        )
        assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        printed[command] = done.stdout

    assert "certified: relative duality gap" in printed["svmlab train"]
    assert "12 jobs: 12 finished, 0 failed" in printed[COMMANDS[1]]
    page = re.search(
        r"notebook/significance_report.html: (\S+)", printed["svmlab report -e svmlab"]
    )
    assert Path(page[1]).is_file()
    assert (copy / "mlflow.db").is_file()  # the store is where the README says


def test_the_readmes_python_snippets_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snippets = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert snippets
    for snippet in snippets:
        exec(compile(snippet, "README.md", "exec"), {})  # the README as written


def test_the_readme_says_where_data_comes_from_before_a_command_needs_it():
    said = README.index("Where the data comes from")
    assert said < README.index("dataset=heart_scale")
    assert "downloaded by name" in README[said : said + 600]
    assert "SVMLAB_DATA_DIR=<dir>" in README[said : said + 600]
