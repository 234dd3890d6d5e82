"""The vocabulary of what a run records: the one place its tags are spelt, and the facts of its
measures that the analysis and the claims read."""

import ast
from pathlib import Path

import pytest

import svmlab
from svmlab import vocabulary
from svmlab.analysis import table
from svmlab.errors import SvmlabError
from svmlab.tracking import columns

SRC = Path(svmlab.__file__).parent
#: The tags by their dotted names (``svmlab.role``; ``solver``, a config key too, is left out).
TAGS = {
    value: name
    for name, value in vars(vocabulary).items()
    if name.endswith("_TAG") and "." in value
}


def _spelt_tags(path: Path) -> set[str]:
    """The tags of the vocabulary that the file spells as a string literal."""
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in TAGS
    }


def test_every_tag_is_spelt_in_the_vocabulary_only():
    spelling = {
        str(p.relative_to(SRC)): _spelt_tags(p)
        for p in SRC.rglob("*.py")
        if p.name != "vocabulary.py"
    }
    assert not {path: tags for path, tags in spelling.items() if tags}


def test_the_tags_are_distinct():
    names = [v for n, v in vars(vocabulary).items() if n.endswith("_TAG")]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    "name",
    [
        "test_accuracy",
        "fit_time_s",
        "n_passes",
        "objective_hinge",
        "time_to_gap_1e-3",
        "iters_to_acc_0.9",
    ],
)
def test_the_analysis_takes_the_direction_of_the_vocabulary(name):
    measure = table.parse_measure(name)
    assert measure.direction == vocabulary.direction(name)
    assert measure.higher_is_better == (vocabulary.direction(name) == vocabulary.HIGHER)


def test_a_measure_without_a_direction_needs_one():
    assert vocabulary.direction("test_majority_rate") is None
    with pytest.raises(SvmlabError, match="say whether higher or lower is better"):
        table.parse_measure("test_majority_rate")
    assert table.parse_measure("test_majority_rate:higher").higher_is_better


def test_the_facts_of_a_measure():
    assert vocabulary.kind("predict_time_s") == vocabulary.TIME
    assert vocabulary.kind("rel_gap_hinge_l2") == vocabulary.GAP
    assert vocabulary.kind("no_such_metric") is None
    assert vocabulary.floor("iters_to_gap_1e-3") == "n_iter"
    assert vocabulary.floor("time_to_obj_1e-2") == "fit_time_s"
    assert vocabulary.ceiling("test_accuracy") == (1.0, 1e-3)
    assert vocabulary.ceiling("fit_time_s") is None
    assert vocabulary.baseline("test_accuracy") == "test_majority_rate"
    assert vocabulary.baseline("train_accuracy") is None


def test_default_ropes_follow_the_kind():
    assert table.default_rope("train_accuracy") == "0.01"
    assert table.default_rope("compile_time_s") == "10%"
    assert table.default_rope("iters_to_gap_1e-3") == "10%"
    assert table.default_rope("objective_hinge") == "0"


def test_a_column_of_the_run_table_is_named_by_its_kind():
    assert columns.split(columns.param("solver.C")) == (columns.PARAMS, "solver.C")
    assert columns.split("solver") == (None, "solver")
    assert columns.split("seeds.x") == (None, "seeds.x")  # not a kind: a dotted key
    table = [columns.metric("fit_time_s"), columns.tag("solver"), columns.metric("n_iter")]
    assert columns.names([*table, "run_id"], columns.METRICS) == ["fit_time_s", "n_iter"]
