"""A solver's parameter values checked against its declared constraints before its family is
imported.

A solver declares the constraints of its parameters in scikit-learn's form
(``_parameter_constraints``), which scikit-learn's validation checks when the estimator is built:
that needs the solver's module, and with it scikit-learn and numba, about a second before a
config error can be reported. This module reads the declaration from the source
(`svmlab.app.config.options`) and decides the values it can decide for certain: numbers against an
``Interval`` with literal bounds, ``"boolean"``, ``None`` and ``StrOptions`` of literal strings.
A constraint of any other kind (options named by a constant, ``"random_state"``, a base class
outside the solvers' source) leaves its parameter undecided here; scikit-learn's check sees
every value again when the estimator is built, so this check only refuses sooner, it never
accepts in scikit-learn's place. The messages follow scikit-learn's.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from svmlab.app.config import options


@dataclass(frozen=True)
class Constraint:
    """One declared alternative: ``admits`` says True, False, or None (undecided here)."""

    kind: str  # "interval", "boolean", "none", "options" or "other"
    integral: bool = False
    low: float | None = None
    high: float | None = None
    closed: str = "neither"
    choices: frozenset = frozenset()

    def admits(self, value) -> bool | None:
        if self.kind == "none":
            return value is None
        if self.kind == "boolean":
            return isinstance(value, bool)
        if self.kind == "options":
            return isinstance(value, str) and value in self.choices
        if self.kind != "interval" or isinstance(value, bool):
            return None
        if not isinstance(value, int if self.integral else (int, float)):
            return False
        return self._within(value)

    def _within(self, value: float) -> bool:
        if math.isnan(value):
            return False
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        above = value >= low if self.closed in ("left", "both") else value > low
        below = value <= high if self.closed in ("right", "both") else value < high
        return above and below

    def __str__(self) -> str:
        if self.kind == "none":
            return "None"
        if self.kind == "boolean":
            return "an instance of 'bool'"
        if self.kind == "options":
            return f"a str among {set(self.choices)}"
        bound = (lambda b: b) if self.integral else float
        low = "-inf" if self.low is None else bound(self.low)
        high = "inf" if self.high is None else bound(self.high)
        return (
            f"{'an int' if self.integral else 'a float'} in the range "
            f"{'[' if self.closed in ('left', 'both') else '('}{low}, "
            f"{high}{']' if self.closed in ('right', 'both') else ')'}"
        )


OTHER = Constraint("other")


def refusal(target: str, params: dict) -> str | None:
    """The message for the first of ``params`` that no declared constraint of the solver class
    ``target`` admits, or None (all admitted, undecided, or ``target`` not in the source)."""
    cls = options.source_targets().get(target)
    if cls is None:
        return None
    declared = _declared(cls, options.source_classes(options.SOURCE))
    for key, value in params.items():
        alternatives = declared.get(key, ())
        if alternatives and all(c.admits(value) is False for c in alternatives):
            texts = [str(c) for c in alternatives]
            allowed = texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"
            return (
                f"The {key!r} parameter of {cls.node.name} must be {allowed}. "
                f"Got {value!r} instead."
            )
    return None


def _declared(cls: options.SourceClass, classes: dict) -> dict[str, list[Constraint]]:
    """The constraints a class declares, with those of the base classes it unpacks
    (``**Base._parameter_constraints``), or those of its nearest base class when it declares
    none; only classes defined in the solvers' source are read."""
    bases = {base.node.name: base for base in options.base_classes(cls, classes)}
    for statement in cls.node.body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == "_parameter_constraints"
            and isinstance(statement.value, ast.Dict)
        ):
            break
    else:
        return _declared(next(iter(bases.values())), classes) if bases else {}
    declared: dict[str, list[Constraint]] = {}
    for key, value in zip(statement.value.keys, statement.value.values):
        if key is None:  # **Base._parameter_constraints
            base = (
                bases.get(value.value.id)
                if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                else None
            )
            declared |= _declared(base, classes) if base else {}
        elif isinstance(key, ast.Constant) and isinstance(value, ast.List):
            declared[key.value] = [_constraint(element) for element in value.elts]
    return declared


def _constraint(element: ast.expr) -> Constraint:
    """The constraint an element of a declared list stands for (OTHER when not decidable)."""
    if isinstance(element, ast.Constant):
        return {None: Constraint("none"), "boolean": Constraint("boolean")}.get(
            element.value, OTHER
        )
    if not (isinstance(element, ast.Call) and isinstance(element.func, ast.Name)):
        return OTHER
    try:
        if element.func.id == "StrOptions" and isinstance(element.args[0], ast.Set):
            return Constraint(
                "options", choices=frozenset(map(ast.literal_eval, element.args[0].elts))
            )
        if element.func.id == "Interval" and isinstance(element.args[0], ast.Name):
            closed = {k.arg: ast.literal_eval(k.value) for k in element.keywords}["closed"]
            return Constraint(
                "interval",
                integral=element.args[0].id == "Integral",
                low=ast.literal_eval(element.args[1]),
                high=ast.literal_eval(element.args[2]),
                closed=closed,
            )
    except (ValueError, KeyError, IndexError):
        pass
    return OTHER
