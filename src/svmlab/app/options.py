"""The generated options of the ``solver`` group: a node per declared solver class, its
``_target_`` and the defaults of its ``__init__``.

A solver declares itself on its class (``name``). `svmlab.solvers.registered` finds the
classes by importing every solver of svmlab, which brings scikit-learn and numba: seconds, too
long for ``svmlab train --help`` or a misspelt key, which are answered before any solver is
imported. So the options of svmlab's own solvers are read from their source instead: every class
in ``svmlab/solvers`` that sets ``name`` in its body, with the literal defaults of its
``__init__`` (its own, or that of the nearest base class defined in the package). The
conformance suite checks, for every registered solver, that this reading equals the node built
from the imported class (`solver_node`). A declared class defined elsewhere (a user's, a
test's) is an option once its module is imported (`imported_nodes`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from pathlib import Path

import svmlab

SOURCE = Path(svmlab.__file__).parent / "solvers"
#: solver parameters the kernel group and the seed set (`config.build_estimator`), kept out
FROM_OTHER_GROUPS = ("kernel", "gamma", "degree", "coef0", "random_state")


def source_classes(source: Path) -> tuple[dict[str, tuple[str, ast.ClassDef]], dict[str, str]]:
    """Every class defined under ``source`` (class name: (module, definition)), and the family
    package that imports each one (class name: package); parsed again only when a file changed
    (parsing costs a tenth of a second, and a sweep's every job reads the declarations)."""
    paths = sorted(source.rglob("*.py"))
    return _parsed(source, tuple((path, path.stat().st_mtime_ns, path.stat().st_size)
                                 for path in paths))


@functools.lru_cache(maxsize=4)
def _parsed(source: Path, files: tuple) -> tuple[dict[str, tuple[str, ast.ClassDef]],
                                                 dict[str, str]]:
    classes: dict[str, tuple[str, ast.ClassDef]] = {}
    exported: dict[str, str] = {}
    for path, *_ in files:
        module = ".".join(path.relative_to(source.parents[1]).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef):
                classes[node.name] = (module, node)
            elif isinstance(node, ast.ImportFrom) and path.name == "__init__.py":
                exported |= {alias.name: module for alias in node.names}
    return classes, exported


def source_targets() -> dict[str, ast.ClassDef]:
    """The definition of every solver class declared in the source, by its ``_target_``."""
    classes, exported = source_classes(SOURCE)
    targets = {}
    for class_name, (module, node) in classes.items():
        if _declared_name(node) is not None:
            package = exported.get(class_name, "")
            path = package if package.startswith("svmlab.solvers.") else module
            targets[f"{path}.{class_name}"] = node
    return targets


def source_nodes() -> dict[str, dict]:
    """The node of every solver declared in svmlab's source, by name; ValueError for a
    declaration this reading cannot follow (a name declared twice, a default that is not a
    literal, an ``__init__`` outside the package)."""
    classes, _ = source_classes(SOURCE)
    nodes: dict[str, dict] = {}
    for target, node in source_targets().items():
        name = _declared_name(node)
        if name in nodes:
            raise ValueError(f"solver {name!r} is declared twice in {SOURCE}")
        nodes[name] = {"_target_": target} | _init_defaults(node, classes)
    return dict(sorted(nodes.items()))


def _declared_name(node: ast.ClassDef) -> str | None:
    for statement in node.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == "name"):
            return ast.literal_eval(statement.value)
    return None


def _init_defaults(node: ast.ClassDef, classes: dict) -> dict:
    """The defaults of the ``__init__`` of ``node`` or of its nearest base class in ``classes``."""
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            args = statement.args
            positional = args.args[1:]
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *zip(args.kwonlyargs, args.kw_defaults)]
            if len(pairs) != len(positional) + len(args.kwonlyargs) or None in args.kw_defaults:
                raise ValueError(f"{node.name}.__init__: every parameter needs a default")
            try:
                return {arg.arg: ast.literal_eval(default) for arg, default in pairs
                        if arg.arg not in FROM_OTHER_GROUPS}
            except ValueError:
                raise ValueError(f"{node.name}.__init__: the defaults of a solver are literals "
                                 f"(numbers, strings, True/False/None)") from None
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            return _init_defaults(classes[base.id][1], classes)
    raise ValueError(f"{node.name}: no __init__ in {SOURCE}")


def solver_node(cls: type) -> dict:
    """The node of an imported solver class: ``_target_`` and its ``__init__``'s defaults but
    the parameters the kernel group and the seed set."""
    from svmlab.solvers import target

    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {"_target_": target(cls)} | {
        p.name: p.default for p in parameters if p.name not in FROM_OTHER_GROUPS}


def imported_nodes() -> dict[str, dict]:
    """The nodes of the declared solver classes imported so far (none before the estimator
    layer is: a solver class imports it)."""
    if "svmlab.estimator.base" not in sys.modules:
        return {}
    from svmlab.estimator.base import declared_solvers

    return {name: solver_node(cls) for name, cls in declared_solvers().items()}
