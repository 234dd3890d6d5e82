"""The command boundary: every command ends through ``cli.run_command``, which turns the error it
ends with into one line naming the command and the status of ``app.exit_codes``."""

import argparse
import sqlite3

import pytest

from svmlab.app import exit_codes
from svmlab.app.cli import run_command
from svmlab.errors import ConfigError, DataError, MissingExtra, StoreError


def ending_with(error: BaseException, **names) -> argparse.Namespace:
    def command(args):
        raise error

    return argparse.Namespace(func=command, **{"command": "runs", **names})


@pytest.mark.parametrize(
    "error,status",
    [
        (ConfigError("--last must be a positive number of runs"), exit_codes.EXIT_USAGE),
        (DataError("no dataset 'a1b'"), exit_codes.EXIT_USAGE),
        (MissingExtra("pip install 'svmlab[server]'"), exit_codes.EXIT_USAGE),
        (StoreError("no tracking store at sqlite:///x.db"), exit_codes.EXIT_STORE),
    ],
)
def test_an_error_of_svmlab_is_one_line_and_its_status(capsys, error, status):
    assert run_command(ending_with(error, runs_command="list")) == status
    assert capsys.readouterr().err == f"svmlab runs list: error: {error}\n"


def test_a_fault_of_the_store_is_named_with_the_store(capsys, tmp_path):
    store = tmp_path / "mlflow.db"
    fault = sqlite3.DatabaseError("file is not a database")
    args = ending_with(fault, command="analyze", tracking_uri=f"sqlite:///{store}")
    assert run_command(args) == exit_codes.EXIT_STORE
    line = capsys.readouterr().err
    assert line.startswith(f"svmlab analyze: error: the tracking store sqlite:///{store} is ")
    assert line.count("\n") == 1


def test_a_password_in_the_line_is_masked(capsys):
    error = StoreError("cannot open postgresql://svmlab:secret@db:5432/runs")
    assert run_command(ending_with(error)) == exit_codes.EXIT_STORE
    assert "secret" not in capsys.readouterr().err


def test_any_other_error_is_a_bug_and_keeps_its_traceback():
    with pytest.raises(ZeroDivisionError):
        run_command(ending_with(ZeroDivisionError("division by zero")))


def test_the_statuses_are_those_a_shell_expects():
    assert (exit_codes.EXIT_OK, exit_codes.EXIT_USAGE, exit_codes.EXIT_STORE) == (0, 2, 3)
    assert exit_codes.EXIT_INTERRUPTED == 128 + 2  # SIGINT
