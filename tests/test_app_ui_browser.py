"""The MLflow UI in a real browser (Debian's Chromium driven by Playwright) on a real
`svmlab server`: the pages svmlab prints open on the runs table in the model-training view, a
run's page shows its convergence metrics, and a report's page draws its figures.

One browser, launched once with a fresh profile (the UI keeps its view choice in the browser's
local storage: a fresh profile is a first visit). Skipped where Playwright or Chromium is
missing.
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from mlflow import MlflowClient

from support.runs import child_env
from support.servers import tracking_server, train_command
from svmlab.app import cli

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("SVMLAB_CHROMIUM", "/usr/bin/chromium")
if not Path(CHROMIUM).is_file():
    pytest.skip(f"no Chromium at {CHROMIUM} (set SVMLAB_CHROMIUM)", allow_module_level=True)

pytestmark = pytest.mark.slow
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PATIENCE_MS = 120_000  # a loaded machine renders slowly; a wait for a state, not a timing
SWEEP = ("solver=liblinear,libsvm", "dataset=breast_cancer,synthetic_gaussian")
RUN_NAMES = {
    f"{s}-{d}-linear-seed0"
    for s in ("liblinear", "libsvm")
    for d in ("breast_cancer", "synthetic_gaussian")
}


def printed(text: str, label: str) -> str:
    """The URL a command printed after ``label``."""
    return re.search(rf"{re.escape(label)}:?\s+(http\S+)", text)[1]


def svmlab_process(*argv: str) -> str:
    """`svmlab ...` as a child process (a command that sets MLflow's tracking URI for good);
    its output."""
    done = subprocess.run(
        [sys.executable, "-m", "svmlab.app.cli", *argv],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_printed_pages_show_the_runs_their_metrics_and_the_reports_figures(
    store, tmp_path, capsys
):
    with tracking_server(f"sqlite:///{store}", tmp_path / "artifacts") as url:
        sweep = subprocess.run(
            train_command(url, tmp_path / "work", "-m", *SWEEP, "tracking.log_model=false"),
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert sweep.returncode == 0, sweep.stdout + sweep.stderr
        runs_page = printed(sweep.stdout, "runs in the MLflow UI")
        client = MlflowClient(url)
        (child,) = [
            r.info.run_id
            for r in client.search_runs(
                [client.get_experiment_by_name("svmlab").experiment_id],
                "attributes.run_name = 'libsvm-synthetic_gaussian-linear-seed0'",
            )
        ]
        assert cli.main(["runs", "show", child, "--tracking-uri", url]) == 0
        run_page = printed(capsys.readouterr().out, "this run")
        report = svmlab_process("report", "-e", "svmlab", "--tracking-uri", url)
        report_page = printed(report, "report.html")

        with sync_api.sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
            browser = playwright.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True
            )
            try:
                page = browser.new_page()
                page.set_default_timeout(PATIENCE_MS)
                shows_the_runs(page, runs_page)
                shows_the_convergence_metrics(page, run_page)
                draws_the_figures(page, report_page)
            finally:
                browser.close()


def shows_the_runs(page, address: str) -> None:
    """The runs table lists the sweep's parent run and, expanded, its four runs, in the
    model-training view (not MLflow's GenAI view, whose runs page is 'Training runs')."""
    page.goto(address)
    names = page.locator('[role=gridcell][col-id*="Run Name"]')
    parent = names.filter(has_text="sweep " + " ".join(SWEEP))
    parent.wait_for()
    assert page.get_by_text("Training runs", exact=True).count() == 0
    assert page.get_by_text("Evaluation runs", exact=True).count() == 0
    parent.locator("button").click()  # a sweep's runs are nested under its parent run
    sync_api.expect(names).to_have_count(1 + len(RUN_NAMES))
    shown = {text.splitlines()[-1] for text in names.all_inner_texts()}
    assert shown >= RUN_NAMES


def shows_the_convergence_metrics(page, address: str) -> None:
    """The run's page names it and lists its trace/... metric histories and certificate."""
    page.goto(address)
    page.get_by_text("libsvm-synthetic_gaussian-linear-seed0").first.wait_for()
    page.get_by_text("trace/objective_hinge_l2", exact=True).first.wait_for()
    assert page.get_by_text("rel_gap_hinge_l2_bias", exact=True).count() >= 1


def draws_the_figures(page, address: str) -> None:
    """The report, shown in the UI's artifact view, has figures, every one of them loaded."""
    page.goto(address)
    page.get_by_text("report.html").first.wait_for()
    page.locator("iframe").first.content_frame.locator("img").first.wait_for()
    frames = [f for f in page.frames if f != page.main_frame]
    images = [
        image
        for frame in frames
        for image in frame.evaluate(
            "() => Promise.all([...document.images].map(i => i.decode().then("
            "() => [i.complete, i.naturalWidth], () => [i.complete, 0])))"
        )
    ]
    assert len(images) >= 3, images  # a figure per measure and the convergence curves
    assert all(complete and width > 0 for complete, width in images), images
