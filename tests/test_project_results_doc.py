"""docs/results.md, the published claims tables: no decided verdict below its stated confidence.

The tables are the output of ``svmlab workflow table``; a row whose verdict is decided
(reproduced, not reproduced, or depends on a setting: decided at each of its points) must show an
interval that attains the claims' confidence (95 %).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from svmlab.workflows import claims

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results.md"
DECIDED = (claims.REPRODUCED, claims.NOT_REPRODUCED, claims.DEPENDS)


def tables(text: str) -> list[list[dict[str, str]]]:
    """The Markdown tables of ``text``, each a list of rows keyed by the header's cells."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and lines[i + 1].startswith("|---"):
            header = [cell.strip() for cell in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, (c.strip() for c in row.strip("|").split("|")))))
            found.append(rows)
    return found


def decided_rows(text: str) -> list[dict[str, str]]:
    return [
        row
        for table in tables(text)
        for row in table
        if "confidence" in row and row.get("verdict", "").startswith(DECIDED)
    ]


def test_every_decided_verdict_in_the_results_reaches_its_confidence():
    rows = decided_rows(RESULTS.read_text())
    assert rows, "docs/results.md has no decided claim with a confidence column"
    low = [
        (row["claim (source)"], row["confidence"])
        for row in rows
        if float(row["confidence"].rstrip(" %")) < claims.CONFIDENCE * 100 - 1e-9
    ]
    assert not low, f"decided below {claims.CONFIDENCE:.0%}: {low}"


def test_the_check_finds_a_decided_verdict_below_its_confidence():
    text = (
        "| claim (source) | confidence | verdict |\n|---|---|---|\n"
        "| a (b) | 87.5 % | reproduced |\n| c (d) | 75 % | inconclusive |\n"
    )
    assert [row["confidence"] for row in decided_rows(text)] == ["87.5 %"]


def test_the_tally_counts_the_papers_claims_apart_from_companions_and_statements():
    frame = pd.DataFrame(
        {
            "kind": ["paper", "paper", "svmlab", "svmlab", "paper"],
            "beside": ["", "", "the first claim", "", ""],
            "verdict": [
                "reproduced",
                "depends on the reading",
                "reproduced",
                "not reproduced",
                "not testable here",
            ],
        }
    )
    row = claims.tally_row("w", frame)
    assert row == {
        "workflow": "`w`",
        "reproduced": "1 (1)",
        "not reproduced": "0 (1)",
        "inconclusive": "0 (0)",
        "depends": "1 (0)",
        "not testable here": "1 (0)",
    }
