"""Builds svmlab as pyproject.toml describes, and writes the commit the package was built from
into it (``svmlab/COMMIT``): an installed copy (``pip install .``) has no git checkout to ask, and
its runs still name the source they came from (tag ``svmlab.git_commit``)."""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def source_commit() -> str | None:
    """HEAD of the checkout being built, ``+dirty`` if modified; None outside a checkout."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(Path(__file__).parent), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()

    try:
        return git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain") else "")
    except (OSError, subprocess.SubprocessError):
        return None


class BuildWithCommit(build_py):
    def run(self) -> None:
        super().run()
        commit = source_commit()
        if commit and not self.editable_mode:  # an editable install asks git at run time
            (Path(self.build_lib) / "svmlab" / "COMMIT").write_text(commit + "\n")


setup(cmdclass={"build_py": BuildWithCommit})
