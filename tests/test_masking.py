"""A URI's password or token is masked wherever svmlab writes it (the masking function here;
the store and the printed lines of real runs in tests/test_app_team_server.py)."""

import pytest
from mlflow.exceptions import MlflowException

from svmlab.masking import mask
from svmlab.tracking.store import store_error_line, ui_line


@pytest.mark.parametrize(
    "text,masked",
    [
        ("postgresql://user:password@host/db", "postgresql://user:***@host/db"),
        (
            "postgresql+psycopg://u:p%40ss@127.0.0.1:5432/mlflow",
            "postgresql+psycopg://u:***@127.0.0.1:5432/mlflow",
        ),
        (
            "tracking:\n  uri: http://alice:s3cret@10.0.0.1:5000\n",
            "tracking:\n  uri: http://alice:***@10.0.0.1:5000\n",
        ),
        ("'mysql://root:to@or@db:3306/x'", "'mysql://root:***@or@db:3306/x'"),
        (
            "tracking.uri=http\\://u\\:pw@h\\:5000",
            "tracking.uri=http\\://u\\:***@h\\:5000",
        ),  # Hydra's
        (
            '"tracking.uri=http\\\\://u\\\\:pw@h"',
            '"tracking.uri=http\\\\://u\\\\:***@h"',
        ),  # in JSON
        (
            "postgresql://u@h/db?sslmode=require&password=pw",
            "postgresql://u@h/db?sslmode=require&password=***",
        ),
        (
            "https://bucket/key?X-Amz-Signature=abc&x=1",
            "https://bucket/key?X-Amz-Signature=***&x=1",
        ),
        ("http://h:5000/api?access_token=t0k3n", "http://h:5000/api?access_token=***"),
    ],
)
def test_a_uris_secret_is_masked_wherever_it_stands(text, masked):
    assert mask(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "sqlite:////tmp/mlflow.db",
        "postgresql://mlflow@127.0.0.1:5432/mlflow",
        "http://127.0.0.1:5000",
        "solver.C: 1.0",
        "a: b@c",
        "mlflow-artifacts:/1/abc/artifacts",
    ],
)
def test_text_without_a_secret_is_left_as_it_is(text):
    assert mask(text) == text


def test_the_store_lines_mask_the_password():
    uri = "http://alice:s3cret@127.0.0.1:1"
    exc = MlflowException(
        "API request to endpoint /api/2.0/mlflow/runs/create failed with error "
        f"code 403 != 200. Response body: 'Permission denied' ({uri})"
    )
    line = store_error_line(exc, uri)
    assert "s3cret" not in line and "alice:***@127.0.0.1:1" in line
    assert "403" in line and "MLFLOW_TRACKING_USERNAME" in line
    assert "s3cret" not in ui_line(uri, "1", "0123") and "alice" not in ui_line(uri, "1")
    assert "s3cret" not in ui_line("postgresql://alice:s3cret@dbhost/mlflow", "1")


def test_a_database_that_wants_a_password_says_where_it_is_read():
    uri = "postgresql://mlflow@127.0.0.1:5432/mlflow"
    exc = MlflowException(
        'connection to server at "127.0.0.1", port 5432 failed: fe_sendauth: no password supplied'
    )
    assert "PGPASSFILE" in store_error_line(exc, uri)
