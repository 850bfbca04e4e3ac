"""No raw Python in a report (issue 26): every bundled scenario's report.html, rendered over
a short horizon, has no dicts, lists, long floats, snake_case labels, bare integer column
names, empty tables or unrendered Markdown, and its credits are folded."""

from __future__ import annotations

import html as htmllib
import re

import pandas as pd
import pytest

from scenarios.loader import bundled_names, load_scenario

#: a short horizon per scenario, and what else makes it quick
QUICK = {
    "campus-100mw-interconnection": {"grid.contingency_hours": 2},
    "campus-100mw-flexible": {"grid.flexible.cosim_start": "START",
                              "grid.flexible.cosim_end": "START+1D"},
    "campus-100mw-stabilisation": {"facility.end": "START+30MIN"},  # 0.1 s steps
    "queue-case118": {"grid.contingency_hours": 2},  # [[facility]]: each one's end is set
}


def _report(name: str, folder) -> str:
    from scenarios.runner import run_scenario

    scenario = load_scenario(name)
    queued = scenario.queued  # [[facility]] tables: a queue, one end per facility
    start = pd.Timestamp((scenario.facility[0] if queued else scenario.facility).start)
    iso = {"START": start, "START+1D": start + pd.Timedelta(days=1),
           "START+30MIN": start + pd.Timedelta(minutes=30)}
    ends = ([f"facility.{k}.end" for k in range(len(scenario.facility))] if queued
            else ["facility.end"])
    overrides = {**{key: (start + pd.Timedelta(days=2)).isoformat() for key in ends},
                 "outputs.facility_parquet": False, "outputs.jobs": False}
    for key, value in QUICK.get(name, {}).items():
        overrides[key] = iso[value].isoformat() if value in iso else value
    run_scenario(name, folder, progress=False, overrides=overrides)
    return (folder / "report.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module", params=bundled_names())
def page(request, tmp_path_factory):
    pytest.importorskip("grid")
    pytest.importorskip("microgrid")
    return request.param, _report(request.param, tmp_path_factory.mktemp(request.param))


def _text(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))


def _body(page: str) -> str:
    """The page before the folded credits, without figures' data and code spans."""
    body = page.split("<details><summary>Data credits")[0]
    body = re.sub(r'src="data:[^"]+"', 'src=""', body)
    body = re.sub(r"<style>.*?</style>", "", body, flags=re.S)
    return re.sub(r"<code>.*?</code>", "", body, flags=re.S)


def _labels(body: str) -> list[str]:
    """Headers, captions, the first cell of each row and the cells of label columns."""
    out = [_text(m) for m in re.findall(r"<(?:th|h[1-3]|figcaption|summary)[^>]*>(.*?)</", body,
                                       flags=re.S)]
    out += [_text(m) for m in re.findall(r"<p class=.muted.>(.*?)</p>", body, flags=re.S)]
    for table in re.findall(r"<table>(.*?)</table>", body, flags=re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
        heads = [_text(h).strip() for h in re.findall(r"<th>(.*?)</th>", rows[0], flags=re.S)]
        keep = [i for i, h in enumerate(heads) if i == 0 or h in ("metric", "quantity", "term")]
        for row in rows[1:]:
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
            out += [_text(cells[i]) for i in keep if i < len(cells)]
    return out


SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b(?!\.(?:parquet|json|csv|md|toml))")


def test_no_python_structures_or_long_floats(page):
    name, html = page
    text = _text(_body(html))
    assert "{'" not in text and "': " not in text, name
    assert not re.search(r"\[['\"]|\[-?\d[\d.]*, ", text), name
    assert not re.search(r"\d\.\d{8,}", text), (name, re.findall(r"\S*\d\.\d{8,}\S*", text)[:3])
    assert not re.search(r"year [\d]{1,3},\d{3}\b", text), name  # cost year 2,025


def test_labels_are_words_with_units_in_brackets(page):
    name, html = page
    snake = sorted({m for label in _labels(_body(html)) for m in SNAKE.findall(label)})
    assert snake == [], (name, snake)


def test_no_empty_tables_or_bare_index_columns(page):
    name, html = page
    body = _body(html)
    assert not re.search(r"<table><tr>(<th>[^<]*</th>)+</tr></table>", body), name
    assert not re.search(r"<th>\d+</th>", body), name


def test_credits_folded_and_markdown_rendered(page):
    name, html = page
    assert html.count("<details><summary>Data credits") == 1, name
    credits = html.split("<details><summary>Data credits")[1]
    # the sources' table and the citations' titles rendered (the BSD list is verbatim in <pre>)
    assert "<table>" in credits and "<em>" in credits
    prose = _text(re.sub(r"<pre>.*?</pre>", "", credits, flags=re.S))
    assert "**" not in prose and "](" not in prose and not re.search(r"(?<!\w)\*\w", prose)
