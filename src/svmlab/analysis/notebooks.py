"""Execute the parameterised report notebooks headless (papermill) and convert them to HTML."""

from __future__ import annotations

from pathlib import Path

from svmlab.errors import SvmlabError

#: The notebooks shipped inside the package.
NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
SIGNIFICANCE_REPORT = NOTEBOOK_DIR / "significance_report.ipynb"
CONVERGENCE = NOTEBOOK_DIR / "convergence.ipynb"
#: The kernel's own log stays off the console: its warning that it talks to papermill over
#: loopback TCP without encryption, and the interrupt it logs when papermill shuts it down. A
#: failing cell is papermill's error, raised below.
QUIET_KERNEL = ["--log-level=CRITICAL"]


def execute(
    notebook: str | Path, output_dir: Path, parameters: dict, timeout_s: int = 600
) -> tuple[Path, Path]:
    """Run ``notebook`` with ``parameters`` injected; write the executed notebook and its HTML to
    ``output_dir``; return both paths. A failing cell raises SvmlabError naming the notebook."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    notebook = Path(notebook)
    if not notebook.is_file():
        raise SvmlabError(f"no notebook at {notebook}")
    output_dir.mkdir(parents=True, exist_ok=True)
    executed = output_dir / notebook.name
    try:
        papermill.execute_notebook(
            str(notebook),
            str(executed),
            parameters=parameters,
            kernel_name="python3",
            progress_bar=False,
            execution_timeout=timeout_s,
            extra_arguments=QUIET_KERNEL,
        )
    except papermill.PapermillExecutionError as exc:
        raise SvmlabError(
            f"{notebook.name} failed in cell {exc.exec_count}: {exc.ename}: "
            f"{exc.evalue} (executed copy: {executed})"
        ) from None
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
    html = executed.with_suffix(".html")
    html.write_text(body, encoding="utf-8")
    return executed, html
