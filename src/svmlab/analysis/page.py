"""The analysis as one self-contained, styled HTML page: a table of contents, the console summary
(folded), then per measure its conclusions in words, its tables and its figures. The style sheet is
inline and the figures are embedded, so the page reads the same from the MLflow UI's artifact
view, a local folder or a copy of the file alone."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 0;
       color: #1d2330; background: #f6f7f9; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { border-bottom: 2px solid #3b6ea8; padding-bottom: 0.2rem; margin-top: 2.5rem; }
h3 { margin: 1.6rem 0 0.4rem; color: #3b6ea8; font-size: 1.05rem; }
nav { background: #fff; border: 1px solid #dde2ea; border-radius: 6px; padding: 0.5rem 1rem; }
nav a { margin-right: 1.2rem; color: #3b6ea8; text-decoration: none; }
details { margin-top: 1rem; } details > summary { cursor: pointer; color: #3b6ea8; }
pre.summary { background: #fff; border: 1px solid #dde2ea; border-radius: 6px; padding: 1rem;
              overflow-x: auto; font-size: 0.8rem; white-space: pre; }
ul.conclusions { background: #eef3fa; border-left: 4px solid #3b6ea8; padding: 0.6rem 1rem 0.6rem
                 2rem; }
div.scroll { overflow-x: auto; max-width: 100%; }
table.data { border-collapse: collapse; font-size: 0.82rem; background: #fff;
             font-variant-numeric: tabular-nums; }
table.data th, table.data td { border: 1px solid #dde2ea; padding: 0.25rem 0.55rem;
                               text-align: right; white-space: nowrap; }
table.data thead th { background: #e8edf4; position: sticky; top: 0; }
table.data tbody tr:nth-child(even) { background: #f8f9fb; }
table.data tbody th { text-align: left; }
td.reject { background: #fde2e1; color: #8a1c17; font-weight: 600; }
td.keep { color: #5b6577; }
figure { display: inline-block; margin: 0.8rem 1rem 0.8rem 0; background: #fff;
         border: 1px solid #dde2ea; border-radius: 6px; padding: 0.5rem; vertical-align: top; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.8rem; color: #5b6577; margin-top: 0.3rem; }
"""


def table(frame: pd.DataFrame, index: bool) -> str:
    """``frame`` as an HTML table (4 significant digits), decisions marked for the style sheet."""
    body = frame.to_html(
        index=index, border=0, classes="data", na_rep="", float_format="{:.4g}".format
    )
    body = body.replace("<td>reject H0</td>", "<td class='reject'>reject H0</td>")
    return (
        "<div class='scroll'>"
        + body.replace("<td>not rejected</td>", "<td class='keep'>not rejected</td>")
        + "</div>"
    )


def figure(path: Path, caption: str) -> str:
    """The PNG image at ``path``, embedded: the page works without the files beside it (the
    MLflow UI's artifact view, a mail attachment, a copy)."""
    src = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f"<figure><img src='{src}' alt='{html.escape(caption)}'>"
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def conclusions(lines: list[str]) -> str:
    return (
        "<ul class='conclusions'>"
        + "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        + "</ul>"
    )


def render(title: str, summary: str, sections: list[tuple[str, str, str]]) -> str:
    """The whole page; ``sections`` are (anchor, title, HTML body)."""
    nav = "".join(f"<a href='#{html.escape(a)}'>{html.escape(t)}</a>" for a, t, _ in sections)
    body = "".join(
        f"<section id='{html.escape(a)}'><h2>{html.escape(t)}</h2>{b}</section>"
        for a, t, b in sections
    )
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body><main>"
        f"<h1>{html.escape(title)}</h1><nav>{nav}</nav>"
        f"<details><summary>console summary</summary>"
        f"<pre class='summary'>{html.escape(summary)}</pre></details>"
        f"{body}</main></body></html>\n"
    )
