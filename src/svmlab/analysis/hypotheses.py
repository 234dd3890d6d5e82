"""Directed hypotheses per pair ('FW<CVM'), and one orientation of every pair of treatments that
all tables of a measure share, so that d = A - B has the same sign everywhere."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from svmlab.errors import SvmlabError

#: The operator of a hypothesis and its alternative for d = A - B.
OPERATORS = {"<": "less", ">": "greater", "!=": "two-sided"}
_PATTERN = re.compile(
    r"^(?:(?P<measure>[^:<>!]+):)?(?P<a>[^<>!]+?)\s*(?P<op><|>|!=)\s*"
    r"(?P<b>[^<>!]+)$"
)


@dataclass(frozen=True)
class Hypothesis:
    """H1 for d = a - b: 'less' (A's values lower), 'greater' or 'two-sided'; ``measure`` None
    means every measure."""

    a: str
    b: str
    alternative: str
    measure: str | None = None

    @property
    def text(self) -> str:
        op = {v: k for k, v in OPERATORS.items()}[self.alternative]
        return f"{self.a} {op} {self.b}"

    @property
    def spec(self) -> str:
        """As given on the command line: '[MEASURE:]A<B'."""
        return self.text if self.measure is None else f"{self.measure}:{self.text}"


@dataclass(frozen=True)
class Pair:
    """A pair oriented once for every table: d = a - b, tested against ``alternative``."""

    a: str
    b: str
    alternative: str = "two-sided"


def parse(spec: str) -> Hypothesis:
    """'[MEASURE:]A<B', 'A>B' or 'A!=B': A's values lower, higher, or different (two-sided)."""
    found = _PATTERN.match(spec.strip())
    if not found or found["a"].strip() == found["b"].strip():
        raise SvmlabError(
            f"bad hypothesis {spec!r}; expected [MEASURE:]A<B, A>B or A!=B with "
            f"two different treatments, e.g. 'fit_time_s:MFW<CVM' (MFW's values "
            f"lower than CVM's)"
        )
    measure = found["measure"].strip() if found["measure"] else None
    return Hypothesis(found["a"].strip(), found["b"].strip(), OPERATORS[found["op"]], measure)


def pairs(treatments, measure: str, hypotheses=(), control: str | None = None) -> list[Pair]:
    """Every pair of ``treatments`` once: as a hypothesis for ``measure`` (or for every measure)
    states it, else (other, control) when it contains the control, else in sorted order, both
    two-sided. Hypotheses naming unknown treatments, or two for one pair, are errors."""
    names = sorted(map(str, treatments))
    stated: dict[frozenset, Pair] = {}
    for h in hypotheses:
        if h.measure not in (None, measure):
            continue
        unknown = [t for t in (h.a, h.b) if t not in names]
        if unknown:
            raise SvmlabError(
                f"hypothesis {h.text!r}: unknown treatment(s) "
                f"{', '.join(unknown)}; treatments: {', '.join(names)}"
            )
        key = frozenset((h.a, h.b))
        if key in stated:
            raise SvmlabError(
                f"two hypotheses for {h.a} and {h.b} on {measure}: "
                f"{stated[key].a} vs {stated[key].b} and {h.text!r}"
            )
        stated[key] = Pair(h.a, h.b, h.alternative)
    out = []
    for a, b in itertools.combinations(names, 2):
        if frozenset((a, b)) in stated:
            out.append(stated[frozenset((a, b))])
        else:
            out.append(Pair(b, a) if a == control else Pair(a, b))
    return out
