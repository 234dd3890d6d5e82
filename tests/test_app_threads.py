"""Threads per worker: a parallel search's processes share the cores instead of each using all."""

import os
import subprocess
import sys

from svmlab.app.launch.threads import THREAD_VARIABLES, threads_per_worker, worker_environment


def test_each_worker_gets_its_share_of_the_cores_and_the_users_setting_wins(monkeypatch):
    cores = os.cpu_count()
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert threads_per_worker(1) == cores
    assert threads_per_worker(cores) == 1
    assert threads_per_worker(4 * cores) == 1
    env = worker_environment(cores)
    assert {env[name] for name in THREAD_VARIABLES} == {"1"}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert worker_environment(cores)["OMP_NUM_THREADS"] == "3"


def test_the_launching_process_limits_its_own_loaded_pools():
    """numpy's BLAS is loaded (and its threads started) before the limit, which still holds."""
    code = (
        "import os, numpy, threadpoolctl\n"
        "from svmlab.app.launch.threads import limit_this_process\n"
        "limit_this_process(os.cpu_count())\n"
        "print(sorted({p['num_threads'] for p in threadpoolctl.threadpool_info()}))"
    )
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[1]"
