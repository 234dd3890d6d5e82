"""The generated options of the ``solver`` group: a node per declared solver class, its
``_target_`` and the defaults of its ``__init__``.

A solver declares itself on its class (``name``). `svmlab.solvers.registered` finds the
classes by importing every solver of svmlab, which brings scikit-learn and numba: seconds, too
long for ``svmlab train --help`` or a misspelt key, which are answered before any solver is
imported. So the options of svmlab's own solvers are read from their source instead: every class
in ``svmlab/solvers`` that sets ``name`` in its body, with the literal defaults of its
``__init__`` (its own, or that of the nearest base class defined in the package). Classes are
known by module and name, and a base class by what its module defines or imports under that
name, so a class of the same name in another family never stands in for it. A declaration this
reading cannot follow leaves that one solver out, with one line naming its file; the others
stay options. The conformance suite checks, for every registered solver, that this reading
equals the node built from the imported class (`solver_node`). A declared class defined
elsewhere (a user's, a test's) is an option once its module is imported (`imported_nodes`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

import svmlab

SOURCE = Path(svmlab.__file__).parent / "solvers"
#: solver parameters the kernel group and the seed set (`config.build_estimator`), kept out
FROM_OTHER_GROUPS = ("kernel", "gamma", "degree", "coef0", "random_state")


@dataclass(frozen=True)
class SourceClass:
    """A class defined in the solvers' source: its module, file and definition, and the classes
    its module imports by name (name: qualified name), to resolve its bases."""

    module: str
    path: Path
    node: ast.ClassDef
    imports: dict

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.node.name}"


def source_classes(source: Path) -> dict[str, SourceClass]:
    """Every class defined under ``source``, by qualified name (``module.Class``: two families
    may define classes of the same name)."""
    return _parsed(source, _stamp(source))[0]


def exported_classes(source: Path) -> dict[str, str]:
    """The classes the packages under ``source`` import in their ``__init__`` (qualified name
    as imported: package)."""
    return _parsed(source, _stamp(source))[1]


def _stamp(source: Path) -> tuple:
    """The files under ``source`` with their modification time and size: the source is parsed
    again only when a file changed (parsing costs a tenth of a second, and a sweep's every job
    reads the declarations)."""
    return tuple(
        (path, path.stat().st_mtime_ns, path.stat().st_size)
        for path in sorted(source.rglob("*.py"))
    )


@functools.lru_cache(maxsize=4)
def _parsed(source: Path, files: tuple) -> tuple[dict[str, SourceClass], dict[str, str]]:
    classes, exported = {}, {}
    for path, *_ in files:
        module = ".".join(path.relative_to(source.parents[1]).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        body = ast.parse(path.read_text(), str(path)).body
        imports = {
            alias.asname or alias.name: f"{statement.module}.{alias.name}"
            for statement in body
            if isinstance(statement, ast.ImportFrom) and statement.module
            for alias in statement.names
        }
        if path.name == "__init__.py":
            exported |= dict.fromkeys(imports.values(), module)
        for node in body:
            if isinstance(node, ast.ClassDef):
                found = SourceClass(module, path, node, imports)
                classes[found.qualified] = found
    return classes, exported


def base_classes(cls: SourceClass, classes: dict[str, SourceClass]) -> list[SourceClass]:
    """The bases of ``cls`` that are defined in the solvers' source, nearest first: a name
    defined in its own module, else the class its module imports under that name."""
    bases = []
    for base in cls.node.bases:
        if isinstance(base, ast.Name):
            qualified = (
                f"{cls.module}.{base.id}"
                if f"{cls.module}.{base.id}" in classes
                else _defined(cls.imports.get(base.id, ""), classes)
            )
            if qualified in classes:
                bases.append(classes[qualified])
    return bases


def _defined(qualified: str, classes: dict[str, SourceClass]) -> str:
    """``qualified`` (``package.Class``) as the class it names where it is defined, following a
    package that imports it (``svmlab.solvers.nesvm.NESVM`` -> ``...nesvm.estimator.NESVM``)."""
    package, _, name = qualified.rpartition(".")
    exporters = [
        c
        for c in classes.values()
        if c.module.startswith(f"{package}.")
        and c.node.name == name
        and c.path.name != "__init__.py"
    ]
    return qualified if qualified in classes or len(exporters) != 1 else exporters[0].qualified


def source_targets() -> dict[str, SourceClass]:
    """Every solver class declared in the source, by its ``_target_``: the family package's
    path when the package imports the class, else its module's."""
    exported = exported_classes(SOURCE)
    targets = {}
    for qualified, cls in source_classes(SOURCE).items():
        if _declared_name(cls.node) is not None:
            package = exported.get(qualified, "")
            path = package if package.startswith("svmlab.solvers.") else cls.module
            targets[f"{path}.{cls.node.name}"] = cls
    return targets


def source_nodes() -> tuple[dict[str, dict], list[str]]:
    """The node of every solver declared in svmlab's source, by name, and one line for each
    declaration this reading cannot follow (a name declared twice, a default that is not a
    literal, an ``__init__`` outside the package), naming its file: such a solver is left out
    of the options, the others stay."""
    classes = source_classes(SOURCE)
    nodes: dict[str, dict] = {}
    files: dict[str, Path] = {}
    problems = []
    for target, cls in source_targets().items():
        name = _declared_name(cls.node)
        where = f"solver {name!r} ({cls.path})"
        if name in nodes:
            problems.append(
                f"{where} is declared twice (also in {files[name]}); this one is left out"
            )
            continue
        try:
            nodes[name] = {"_target_": target} | _init_defaults(cls, classes)
            files[name] = cls.path
        except ValueError as exc:
            problems.append(f"{where} is left out of the options: {exc}")
    return dict(sorted(nodes.items())), problems


def _declared_name(node: ast.ClassDef) -> str | None:
    for statement in node.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == "name"
        ):
            try:
                return ast.literal_eval(statement.value)
            except ValueError:
                return None
    return None


def _init_defaults(cls: SourceClass, classes: dict[str, SourceClass]) -> dict:
    """The defaults of the ``__init__`` of ``cls`` or of its nearest base class in the source."""
    node = cls.node
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            args = statement.args
            positional = args.args[1:]
            pairs = [
                *zip(positional[len(positional) - len(args.defaults) :], args.defaults),
                *zip(args.kwonlyargs, args.kw_defaults),
            ]
            if len(pairs) != len(positional) + len(args.kwonlyargs) or None in args.kw_defaults:
                raise ValueError(f"{node.name}.__init__: every parameter needs a default")
            try:
                return {
                    arg.arg: ast.literal_eval(default)
                    for arg, default in pairs
                    if arg.arg not in FROM_OTHER_GROUPS
                }
            except ValueError:
                raise ValueError(
                    f"{node.name}.__init__: the defaults of a solver are literals "
                    f"(numbers, strings, True/False/None)"
                ) from None
    for base in base_classes(cls, classes):
        return _init_defaults(base, classes)
    raise ValueError(f"{node.name}: no __init__ in {SOURCE}")


def solver_node(cls: type) -> dict:
    """The node of an imported solver class: ``_target_`` and its ``__init__``'s defaults but
    the parameters the kernel group and the seed set."""
    from svmlab.solvers import target

    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {"_target_": target(cls)} | {
        p.name: p.default for p in parameters if p.name not in FROM_OTHER_GROUPS
    }


def imported_nodes() -> dict[str, dict]:
    """The nodes of the declared solver classes imported so far (none before the estimator
    layer is: a solver class imports it)."""
    if "svmlab.estimator.base" not in sys.modules:
        return {}
    from svmlab.estimator.base import declared_solvers

    return {name: solver_node(cls) for name, cls in declared_solvers().items()}
