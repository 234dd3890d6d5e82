"""docs/architecture.md names only what exists: every file or folder path and every dotted
svmlab name in it (``tracking.liveness.reap``) resolves in the code; a dotted name that is no
module or symbol is a config key of conf/config.yaml (``tracking.wait_s``) or a logger or tag
name spelled in the source (``svmlab.progress``)."""

import importlib
import re
from pathlib import Path

import pytest
import yaml

import svmlab

SRC = Path(svmlab.__file__).parent
ROOT = SRC.parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = {
    path.stem if path.suffix else path.name
    for path in SRC.iterdir()
    if path.suffix == ".py" or (path / "__init__.py").exists()
}
PATH = re.compile(
    r"(?<![\w.<])((?:[a-z_.][\w.-]*/)+(?:[\w.-]+\.\w+)?|[\w-]+\.(?:py|yaml|toml|txt|md|ipynb))"
)
RUN_ARTIFACTS = {
    "trace/",
    "trace/trace.parquet",
    "records/",
    "report.html",
}  # a run's files, not the repo's
DOTTED = re.compile(r"(?<![\w./<])((?:svmlab\.)?[a-z_]\w*(?:\.[A-Za-z_]\w*)+)")


def _tokens() -> list[str]:
    """Paths and dotted names in the doc's inline code spans and code blocks."""
    text = DOC.read_text()
    blocks = re.findall(r"```\w*\n(.*?)```", text, flags=re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```\w*\n.*?```", "", text, flags=re.S))
    found = []
    for piece in blocks + spans:
        piece = re.sub(r"(?<=\w)\([^()]*\)", "", piece)  # call arguments are not names
        found += PATH.findall(piece)
        found += [name for name in DOTTED.findall(piece) if not PATH.fullmatch(name)]
    return sorted(set(found))


def _config_keys() -> set[str]:
    def keys(tree, prefix=""):
        for key, value in tree.items():
            yield prefix + str(key)
            if isinstance(value, dict):
                yield from keys(value, f"{prefix}{key}.")

    return set(keys(yaml.safe_load((SRC / "conf" / "config.yaml").read_text())))


def _path_exists(token: str) -> bool:
    token = token.removeprefix("src/svmlab/")
    if "/" not in token:  # a file of the folder the line above names
        return any(SRC.rglob(token)) or (ROOT / token).exists()
    return token in RUN_ARTIFACTS or any(
        (base / token).exists() for base in (ROOT, SRC, SRC / "app", SRC / "conf")
    )


def _spelled_in_the_source(token: str) -> bool:
    """A logger or tag name: the quoted string appears in svmlab's source."""
    return any(f'"{token}"' in path.read_text() for path in SRC.rglob("*.py"))


def _name_exists(token: str) -> bool:
    parts = token.removeprefix("svmlab.").split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module("svmlab." + ".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_the_doc_names_paths_and_names():
    assert len(_tokens()) > 30  # the parse found the doc's names


@pytest.mark.parametrize("token", _tokens())
def test_every_path_and_name_in_the_doc_exists(token):
    if "/" in token or PATH.fullmatch(token):
        assert _path_exists(token), f"docs/architecture.md names {token!r}: no such file or folder"
    elif token.split(".")[0] in PACKAGES or token.startswith("svmlab."):
        assert _name_exists(token) or token in _config_keys() or _spelled_in_the_source(token), (
            f"docs/architecture.md names {token!r}: no such module, symbol, config key, logger "
            f"or tag"
        )
