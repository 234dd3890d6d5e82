"""Formulations own their names: outside `svmlab.estimator.formulations` no Python string
literal of the package names a loss, a penalty or a formulation ('hinge', 'l2', 'l2svm',
'hinge_l2_bias'), is a formulation's metric ('rel_gap_hinge_l2') or starts one by hand
(f"rel_gap_{name}", "objective_" + name). Docstrings are prose, and config YAML is not Python.
"""

import ast
from pathlib import Path

import pytest

import svmlab
from svmlab.estimator.formulations import (
    L2SVM,
    LOSSES,
    METRIC_KINDS,
    PENALTIES,
    metric_name,
    parse_metric,
)

SRC = Path(svmlab.__file__).parent
HOME = SRC / "estimator" / "formulations.py"
PART_NAMES = (
    {part.name for part in LOSSES.values() if isinstance(getattr(part, "name", None), str)}
    | set(LOSSES)
    | set(PENALTIES)
    | {L2SVM.name}
)
PREFIXES = {f"{kind}_" for kind in METRIC_KINDS}
# literals that name a part or a metric kind for another reason than a formulation's name
ALLOWED = {
    # LinearSVC's own loss and penalty parameter values, which `_formulation` maps through the
    # part tables
    "solvers/baselines/estimator.py": {"hinge", "squared_hinge", "l1", "l2"},
    # figure panels ordered by the prefix of any traced column (dual_hybrid, primal_residual)
    "tracking/figures.py": {"rel_gap_", "gap_", "objective_", "dual_", "primal_"},
    # the kind and direction of every metric named by a prefix (objective_smoothed too)
    "vocabulary.py": {"objective_", "primal_", "dual_", "rel_gap_", "gap_"},
    # a run's line in `svmlab runs list` shows its certified gap, named by its formulation tag
    "app/runs.py": {"rel_gap_"},
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _is_formulation(text: str) -> bool:
    try:
        metric_name("gap", text)
    except ValueError:
        return False
    return True


def offending(text: str, f_string_start: bool = False) -> bool:
    """Whether a literal (or the constant start of an f-string) names a formulation."""
    if f_string_start:
        return text in PREFIXES
    return (
        text in PART_NAMES
        or text in PREFIXES
        or _is_formulation(text)
        or parse_metric(text) is not None
    )


def literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the offending literals of a source file."""
    tree = ast.parse(path.read_text(), str(path))
    skip, found = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and offending(first.value, f_string_start=True):
                found.append((node.lineno, first.value))
            skip.update(id(part) for part in node.values)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and offending(node.value)
        ):
            found.append((node.lineno, node.value))
    return found


SOURCES = sorted(p for p in SRC.rglob("*.py") if p != HOME)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_formulation_name_is_spelled_outside_the_formulations(path):
    allowed = ALLOWED.get(path.relative_to(SRC).as_posix(), set())
    assert [(line, text) for line, text in literals(path) if text not in allowed] == []


def test_the_check_finds_what_it_forbids(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        '"""rel_gap_hinge_l2 in prose."""\n'
        'a = "hinge"\nb = f"rel_gap_{a}"\nc = "objective_" + a\n'
        'd = "gap_squared_hinge_l1_penalised_bias"\ne = "hinge_p1.5_l2_bias"\n'
        'f = ("l2svm", "dual_hybrid", "objective_smoothed", "none")\n'
    )
    assert sorted(literals(source)) == [
        (2, "hinge"),
        (3, "rel_gap_"),
        (4, "objective_"),
        (5, "gap_squared_hinge_l1_penalised_bias"),
        (6, "hinge_p1.5_l2_bias"),
        (7, "l2svm"),
    ]


def test_the_allowances_are_still_needed():
    for relative, allowed in ALLOWED.items():
        found = {text for _, text in literals(SRC / relative)}
        assert allowed <= found, f"{relative}: no longer spells {allowed - found}"
