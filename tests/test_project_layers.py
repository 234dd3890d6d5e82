"""The layer rules of docs/architecture.md (its "Rules" table, the one place they are stated,
levels included), checked on every module's imports.

Imports are read from the source (every `import` statement, also inside functions), so a lazy
import breaks a rule as much as a top-level one; so are reads of `sys.argv` and calls of
argparse's parser methods, which a module could make on a parser it was handed. Import cycles
are looked for among the imports that run when a module is loaded (module level, outside
`if TYPE_CHECKING:`), over all of svmlab's modules.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

import svmlab

SRC = Path(svmlab.__file__).parent
DOC = SRC.parent.parent / "docs" / "architecture.md"
STDLIB = set(sys.stdlib_module_names)
HYDRA = {"hydra", "omegaconf"}
PARSER_METHODS = {
    "add_argument",
    "add_argument_group",
    "add_parser",
    "add_subparsers",
    "parse_args",
    "parse_known_args",
    "set_defaults",
}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imports(module: str, path: Path, tree: ast.AST | None = None) -> set[str]:
    """Absolute names of every module imported by the file (or by ``tree``, a statement of it;
    with ``from a import b``, both ``a`` and ``a.b``: ``b`` may be a module)."""
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree or ast.parse(path.read_text(), str(path))):
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
        attribute = (
            isinstance(node, ast.Attribute)
            and node.attr == "argv"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )
        imported = (
            isinstance(node, ast.ImportFrom)
            and node.module == "sys"
            and any(alias.name == "argv" for alias in node.names)
        )
        if attribute or imported:
            found.add("sys.argv")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PARSER_METHODS
        ):
            found.add(node.func.attr)
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def _layer(module: str) -> str:
    """'estimator', 'numerics', 'solvers.<family>', 'tracking', 'app' (also 'conf', the app's
    config), ... or '' (svmlab)."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    if parts[0] == "conf":
        return "app"
    return ".".join(parts[:2]) if parts[0] == "solvers" and len(parts) > 1 else parts[0]


ALLOWED_THIRD_PARTY = {
    "estimator": {"numpy", "scipy", "sklearn"},
    "numerics": {"numpy", "scipy", "numba", "llvmlite"},
    "lifecycle": {"psutil"},
    "masking": set(),
    "vocabulary": set(),
    "errors": set(),
}


def _levels() -> dict[str, int]:
    """Each layer's level, from the Rules table of docs/architecture.md (``solvers.<family>``:
    ``solvers``); the package root ``svmlab`` (its version) below them all."""
    rules = DOC.read_text().split("## Rules", 1)[1]
    levels = {"": -1}
    for level, layer in re.findall(r"^\| (\d+) \| `([\w.]+)", rules, flags=re.M):
        levels[layer.split(".")[0]] = int(level)
    return levels


LEVELS = _levels()
MODULES = list(_modules())


def _violations(module: str, imports: set[str], command_line: set[str] = frozenset()) -> list[str]:
    layer = _layer(module)
    found = [
        f"{use}: only svmlab.app reads the command line"
        for use in sorted(command_line)
        if layer != "app"
    ]
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
            below = other.split(".")[0] if other.split(".")[0] in LEVELS else ""  # svmlab.X
            if below != base and LEVELS[below] >= LEVELS[base]:
                found.append(
                    f"{name}: the {base or 'svmlab'} layer (level {LEVELS[base]}) "
                    f"imports only layers below it; {below or 'svmlab'} is at level "
                    f"{LEVELS[below]}"
                )
            if base == "solvers" and other.startswith("solvers.") and other != layer:
                found.append(f"{name}: a solver family never imports another family")
            if base == "solvers" and other.split(".")[0] not in {
                "estimator",
                "numerics",
                "errors",
                "solvers",
            }:
                found.append(
                    f"{name}: a solver family imports only the estimator and numerics layers"
                )
        elif layer in ALLOWED_THIRD_PARTY and top not in STDLIB | ALLOWED_THIRD_PARTY[layer]:
            found.append(
                f"{name}: the {layer} layer imports only "
                f"{sorted(ALLOWED_THIRD_PARTY[layer])} and the standard library"
            )
        elif layer.startswith("solvers.") and top not in STDLIB | {
            "numpy",
            "scipy",
            "sklearn",
            "numba",
        }:
            found.append(f"{name}: a solver family imports numpy, scipy, scikit-learn and numba")
    return found


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_module_keeps_its_layer_rules(module, path):
    assert _violations(module, _imports(module, path), _command_line(path)) == []


def test_the_levels_are_read_from_the_doc():
    assert LEVELS["vocabulary"] == LEVELS["masking"] < LEVELS["lifecycle"] < LEVELS["solvers"]
    assert LEVELS["solvers"] == LEVELS["tracking"] < LEVELS["recording"] < LEVELS["workflows"]
    assert max(LEVELS.values()) == LEVELS["app"]
    layers = {
        p.stem if p.suffix else p.name
        for p in SRC.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
    }
    assert layers - {"conf", "notebooks"} == set(LEVELS) - {""}, "every layer has its level"


def test_the_rules_catch_what_they_forbid():
    assert _violations("svmlab.tracking.tracker", {"svmlab.recording.run"})
    assert _violations("svmlab.data.libsvm", {"svmlab.tracking.store"})
    assert _violations("svmlab.analysis.measurements", {"svmlab.recording.results"})
    assert _violations("svmlab.vocabulary", {"svmlab.errors"})
    assert not _violations("svmlab.workflows.claims", {"svmlab.analysis.measurements", "svmlab"})
    for lower in (
        "svmlab.tracking.tracker",
        "svmlab.data.libsvm",
        "svmlab.analysis.stage",
        "svmlab.workflows.claims",
        "svmlab.lifecycle",
    ):
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
    assert not _violations(
        "svmlab.solvers.nesvm.problem",
        {"svmlab.solvers.nesvm.estimator", "svmlab.numerics.rows", "numpy"},
    )
    assert not _violations("svmlab.app.runs", {"argparse"}, {"add_parser", "sys.argv"})
    assert not _violations("svmlab.lifecycle", {"psutil", "signal"})
    assert _violations("svmlab.masking", {"numpy"})
    assert _violations("svmlab.masking", {"svmlab.errors"})
    assert not _violations("svmlab.recording.run", {"svmlab.masking"})
    assert _violations("svmlab.tuning.study", {"svmlab.app.tune"})
    assert _violations("svmlab.tuning.study", {"hydra.core"})
    assert not _violations("svmlab.tuning.study", {"svmlab.recording.run", "optuna"})


def test_the_command_line_reads_are_found(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import sys\nfrom sys import argv\n\ndef f(sub):\n"
        "    sub.add_parser('x').add_argument('--y')\n    return sys.argv[1:]\n"
    )
    assert _command_line(source) == {"sys.argv", "add_parser", "add_argument"}


def test_the_layers_are_visible_from_the_tree():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert {
        "estimator",
        "numerics",
        "solvers",
        "tracking",
        "recording",
        "tuning",
        "app",
    } <= packages


@pytest.mark.parametrize("name", ["conf", "workflows", "notebooks"])
def test_the_top_level_links_point_into_the_package(name):
    """The checkout's top level shows what ships inside the package, as links into it."""
    link = Path(__file__).resolve().parents[1] / name
    assert link.is_symlink() and link.resolve() == (SRC / name).resolve()


def _loaded_imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The svmlab modules among ``known`` that loading the file imports: its module-level
    imports (also inside a module-level ``if``, ``try`` or ``with``), but not those inside a
    function or class body, which run later, nor those under ``if TYPE_CHECKING:``, which
    never run. ``from package import module`` imports the module, not what the package defines
    (a package's ``__init__`` that is being loaded may hand out its submodules)."""

    def statements(body):
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                yield from statements(node.orelse)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    yield from statements(getattr(node, part, []))
            elif isinstance(node, ast.ExceptHandler):
                yield from statements(node.body)
            else:
                yield node

    names = set()
    for node in statements(ast.parse(path.read_text(), str(path)).body):
        if isinstance(node, ast.Import):
            names |= _imports(module, path, node)
        elif isinstance(node, ast.ImportFrom):
            found = _imports(module, path, node)
            modules = found - {min(found, key=len)}  # without ``a`` of ``from a import b, c``
            names |= modules if all(m in known for m in modules) else found
    return {name for name in names if name in known and name != module}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (module -> the modules it imports), as the path that
    closes it, or [] when there is none: a depth-first search that meets a module still on
    its path."""
    done, path = set(), []

    def visit(module):
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        path.append(module)
        for other in sorted(graph.get(module, ())):
            found = visit(other)
            if found:
                return found
        path.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        found = visit(module)
        if found:
            return found
    return []


def test_no_import_cycle_among_the_modules():
    """No module imports itself through others when it is loaded (a cycle makes the modules'
    import order matter, and hides which one is the lower)."""
    known = {module for module, _ in MODULES}
    graph = {module: _loaded_imports(module, path, known) for module, path in MODULES}
    assert _cycle(graph) == []


def test_the_cycle_search_finds_a_cycle_of_any_length(tmp_path):
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}) == ["b", "c", "d", "b"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nimport svmlab.b\n"
        "if TYPE_CHECKING:\n    import svmlab.c\n\n"
        "def f():\n    import svmlab.d\n"
    )
    found = _loaded_imports("svmlab.a", source, {"svmlab.b", "svmlab.c", "svmlab.d"})
    assert found == {"svmlab.b"}
