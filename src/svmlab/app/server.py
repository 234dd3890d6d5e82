"""The ``svmlab server`` command (``svmlab.tracking.server`` does the work)."""

from __future__ import annotations

import argparse
import os
import socket

from svmlab.app.exit_codes import EXIT_OK
from svmlab.errors import ConfigError
from svmlab.tracking import server


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "server", description=server.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--backend-store-uri",
        default="sqlite:///mlflow.db",
        help="database of runs, e.g. postgresql://mlflow@127.0.0.1:5432/mlflow "
        "(default: sqlite:///mlflow.db)",
    )
    parser.add_argument(
        "--artifacts-destination",
        default="mlartifacts",
        help="local folder the server keeps artifacts in (default: mlartifacts)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (default: 127.0.0.1, this machine only)",
    )
    parser.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    parser.add_argument(
        "--workers", type=int, default=2, help="server worker processes (default: 2)"
    )
    parser.add_argument(
        "--auth",
        action="store_true",
        help="MLflow's basic-auth app: users and per-experiment permissions; the "
        "admin comes from MLFLOW_AUTH_ADMIN_USERNAME and "
        "MLFLOW_AUTH_ADMIN_PASSWORD (or the file MLFLOW_AUTH_CONFIG_PATH "
        "names), clients set MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="listen on an address other machines reach without --auth "
        "(anyone there may then read, write and delete every run)",
    )
    parser.set_defaults(func=run_server)


def run_server(args: argparse.Namespace) -> int:
    """Prepare the store (and the auth database), then replace this process by ``mlflow
    server``; ConfigError (exit 2) for a URI that is not a database's, an address that cannot be
    listened on or is open to other machines without --auth (or --insecure), an admin without a
    password, StoreError (exit 3) for a database that cannot be opened."""
    if not (args.auth or args.insecure or server.is_loopback(args.host)):
        raise ConfigError(
            f"--host {args.host} lets other machines read, write and delete every "
            f"run: add --auth (users and permissions, see docs/team_server.md), or "
            f"--insecure to allow it anyway"
        )
    try:  # the server's own report of a taken port is a log line and status 0
        with socket.create_server((args.host, args.port)):
            pass
    except OSError as exc:
        raise ConfigError(
            f"cannot listen on {args.host}:{args.port}: "
            f"{os.strerror(exc.errno) if exc.errno else exc} (--host, --port "
            f"choose another)"
        ) from None
    if args.auth:  # first: its user's mistakes leave no new store behind
        server.prepare_auth()
    server.prepare_backend(args.backend_store_uri)
    command = server.server_command(
        args.backend_store_uri,
        args.artifacts_destination,
        args.host,
        args.port,
        args.workers,
        args.auth,
    )
    users = "; users set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD" if args.auth else ""
    print(
        f"tracking server: http://{args.host}:{args.port}  "
        f"(train with tracking.uri=http://{args.host}:{args.port}{users})",
        flush=True,
    )
    os.execve(command[0], command, server.server_environment(args.auth))
    return EXIT_OK  # not reached: execve does not return
