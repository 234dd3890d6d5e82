"""The layer rules of docs/architecture.md (its "Rules" table, the one place they are stated),
checked on every module's imports.

Imports are read from the source (every `import` statement, also inside functions), so a lazy
import breaks a rule as much as a top-level one; so are reads of `sys.argv` and calls of
argparse's parser methods, which a module could make on a parser it was handed.
"""

import ast
import sys
from pathlib import Path

import pytest

import svmlab

SRC = Path(svmlab.__file__).parent
STDLIB = set(sys.stdlib_module_names)
HYDRA = {"hydra", "omegaconf"}
PARSER_METHODS = {"add_argument", "add_argument_group", "add_parser", "add_subparsers",
                  "parse_args", "parse_known_args", "set_defaults"}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imports(module: str, path: Path) -> set[str]:
    """Absolute names of every module imported by the file (with ``from a import b``, both
    ``a`` and ``a.b``: ``b`` may be a module)."""
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                names.add(f"{base}.{node.module}" if node.module else base)
            else:
                names.add(node.module)
                # ``from package import module`` imports that module too
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _command_line(path: Path) -> set[str]:
    """``sys.argv`` and argparse parser methods (``.add_argument``, ...) the file uses."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Attribute) and node.attr == "argv"
                and isinstance(node.value, ast.Name) and node.value.id == "sys"):
            found.add("sys.argv")
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(
                alias.name == "argv" for alias in node.names):
            found.add("sys.argv")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in PARSER_METHODS):
            found.add(node.func.attr)
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def _layer(module: str) -> str:
    """'estimator', 'numerics', 'solvers.<family>', 'tracking', 'app', ... or '' (svmlab)."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    return ".".join(parts[:2]) if parts[0] == "solvers" and len(parts) > 1 else parts[0]


ALLOWED_THIRD_PARTY = {
    "estimator": {"numpy", "scipy", "sklearn"},
    "numerics": {"numpy", "scipy", "numba", "llvmlite"},
    "lifecycle": {"psutil"},
    "masking": set(),
    "vocabulary": set(),
}
ALLOWED_SVMLAB = {
    "estimator": {"estimator", "errors", "masking"},
    "numerics": {"numerics", "errors", "masking"},
    "lifecycle": {"errors", "masking", "vocabulary"},
    "masking": set(),
    "vocabulary": set(),
    "recording": {"recording", "tracking", "estimator", "data", "lifecycle", "errors",
                  "masking", "vocabulary"},
}

MODULES = list(_modules())


def _violations(module: str, imports: set[str], command_line: set[str] = frozenset()
                ) -> list[str]:
    layer = _layer(module)
    found = [f"{use}: only svmlab.app reads the command line"
             for use in sorted(command_line) if layer != "app"]
    for name in imports:
        top = _top(name)
        if top == "mlflow" and layer != "tracking":
            found.append(f"{name}: only svmlab.tracking imports MLflow")
        if top in HYDRA and layer != "app":
            found.append(f"{name}: only svmlab.app imports Hydra")
        if top == "argparse" and layer != "app":
            found.append(f"{name}: only svmlab.app parses the command line")
        if top == "svmlab":
            other = _layer(name)
            base = layer.split(".")[0]
            if other == "app" and base != "app":
                found.append(f"{name}: only the application layer imports svmlab.app")
            if base in ALLOWED_SVMLAB and other.split(".")[0] not in ALLOWED_SVMLAB[base]:
                found.append(f"{name}: the {base} layer imports only "
                             f"{sorted(ALLOWED_SVMLAB[base])}")
            if base == "solvers" and other.startswith("solvers.") and other != layer:
                found.append(f"{name}: a solver family never imports another family")
            if base == "solvers" and other.split(".")[0] not in {"estimator", "numerics",
                                                                 "errors", "solvers"}:
                found.append(f"{name}: a solver family imports only the estimator and "
                             "numerics layers")
        elif layer in ALLOWED_THIRD_PARTY and top not in STDLIB | ALLOWED_THIRD_PARTY[layer]:
            found.append(f"{name}: the {layer} layer imports only "
                         f"{sorted(ALLOWED_THIRD_PARTY[layer])} and the standard library")
        elif layer.startswith("solvers.") and top not in STDLIB | {"numpy", "scipy", "sklearn",
                                                                   "numba"}:
            found.append(f"{name}: a solver family imports numpy, scipy, scikit-learn and numba")
    return found


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_module_keeps_its_layer_rules(module, path):
    assert _violations(module, _imports(module, path), _command_line(path)) == []


def test_the_rules_catch_what_they_forbid():
    for lower in ("svmlab.tracking.tracker", "svmlab.data.libsvm", "svmlab.analysis.stage",
                  "svmlab.workflows.claims", "svmlab.lifecycle"):
        assert _violations(lower, {"svmlab.app.train"})
    assert _violations("svmlab.estimator.base", {"numba"})
    assert _violations("svmlab.estimator.base", {"svmlab.numerics.rows"})
    assert _violations("svmlab.solvers.nesvm.problem", {"svmlab.solvers.pegasos.steps"})
    assert _violations("svmlab.solvers.nesvm.problem", {"svmlab.tracking.tracker"})
    assert _violations("svmlab.analysis.stage", {"mlflow.tracking"})
    assert _violations("svmlab.tracking.tracker", {"omegaconf"})
    assert _violations("svmlab.data.download", {"argparse"})
    assert _violations("svmlab.tracking.server", set(), {"add_argument"})
    assert _violations("svmlab.analysis.stage", set(), {"sys.argv"})
    assert _violations("svmlab.lifecycle", {"mlflow"})
    assert _violations("svmlab.lifecycle", {"svmlab.tracking.store"})
    assert _violations("svmlab.recording.run", {"svmlab.app.launch.sweep"})
    assert _violations("svmlab.recording.run", {"omegaconf"})
    assert _violations("svmlab.recording.run", {"svmlab.analysis.stage"})
    assert not _violations("svmlab.solvers.nesvm.problem", {"svmlab.solvers.nesvm.estimator",
                                                            "svmlab.numerics.rows", "numpy"})
    assert not _violations("svmlab.app.runs", {"argparse"}, {"add_parser", "sys.argv"})
    assert not _violations("svmlab.lifecycle", {"psutil", "signal"})
    assert _violations("svmlab.masking", {"numpy"})
    assert _violations("svmlab.masking", {"svmlab.errors"})
    assert not _violations("svmlab.recording.run", {"svmlab.masking"})


def test_the_command_line_reads_are_found(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import sys\nfrom sys import argv\n\ndef f(sub):\n"
                      "    sub.add_parser('x').add_argument('--y')\n    return sys.argv[1:]\n")
    assert _command_line(source) == {"sys.argv", "add_parser", "add_argument"}


def test_the_layers_are_visible_from_the_tree():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert {"estimator", "numerics", "solvers", "tracking", "recording", "app"} <= packages


@pytest.mark.parametrize("name", ["conf", "workflows", "notebooks"])
def test_the_top_level_links_point_into_the_package(name):
    """The checkout's top level shows what ships inside the package, as links into it."""
    link = Path(__file__).resolve().parents[1] / name
    assert link.is_symlink() and link.resolve() == (SRC / name).resolve()


def test_no_module_of_the_application_layer_imports_one_that_imports_it_back():
    """The application layer's modules import one another without a cycle (a cycle makes
    their import order matter, and hides which one is the lower)."""
    app = {module: _imports(module, path) for module, path in MODULES
           if module.startswith("svmlab.app")}
    for module, imports in app.items():
        for other in imports & set(app):
            assert module not in app[other], f"{module} <-> {other}"
