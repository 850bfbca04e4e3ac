"""``report.html``: one self-contained page (inline CSS, PNG figures as data URIs, no scripts).

Sections: inputs; the facility's grid-facing metrics and figures; grid study tables and
figures; sizing and dispatch; provenance (aiload version, seed, data credits from
``docs/credits.md``). Nothing is fetched when the page is opened.
"""

from __future__ import annotations

import base64
import io
import re
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from scenarios import figures, report_dynamics, report_parts

__all__ = ["render", "render_sweep", "figure_data_uri", "markdown_to_html", "CREDITS_PATH"]

#: the data credits, shown in every report's provenance: package data, a copy of
#: docs/credits.md kept identical by tests/scenarios/test_credits_packaged.py
CREDITS_PATH = Path(str(resources.files("scenarios") / "data" / "credits.md"))

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2933;
background:#f5f7fa;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:24px 32px;background:#fff}
h1{margin:0 0 4px;font-size:1.8em}h2{border-bottom:2px solid #3e7cb1;padding-bottom:4px;
margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.9em}
th,td{border:1px solid #d9e2ec;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef2f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.tw{max-width:100%;overflow-x:auto}
figure{margin:12px 0 24px}figure img{max-width:100%;height:auto;border:1px solid #e4e7eb}
figcaption{font-size:.85em;color:#52606d}.muted{color:#52606d;font-size:.9em}
pre{background:#f0f4f8;padding:8px;overflow-x:auto;font-size:.85em}
.skip{background:#fff3c4;padding:6px 10px;border-left:4px solid #f0b429}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{flex:1 1 150px;background:#f0f4f8;border-left:4px solid #3e7cb1;padding:8px 12px}
.card .v{font-size:1.5em;font-weight:600;font-variant-numeric:tabular-nums}
.card .k{font-size:.85em;color:#52606d}
details{margin:8px 0 16px}summary{cursor:pointer;color:#3e7cb1}
"""


def figure_data_uri(fig: Figure, dpi: int = 90) -> str:
    """A matplotlib Figure as a ``data:image/png;base64,...`` URI (the figure is closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


_esc = report_parts.esc
_table = report_parts.table
_kv = report_parts.quantities


def _inline(text: str) -> str:
    text = _esc(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])", r"<em>\1</em>", text)
    text = re.sub(r"\[([^\]]+)\]\((https?://[^)\s]+)\)", r'<a href="\2">\1</a>', text)
    # a link to another docs page (validation.md) has no target beside a report: its text
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r"\1", text)


def markdown_to_html(text: str) -> str:
    """The small Markdown subset of the docs pages: headings, tables, fences, paragraphs."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append(f"<pre>{_esc(chr(10).join(lines[i + 1:j]))}</pre>")
            i = j + 1
        elif line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")) + 2, 6)
            out.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
            i += 1
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(set(c) <= set("-: ") for c in cells):
                    rows.append(cells)
                i += 1
            head, *body = rows
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>")
            out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body]
            out.append("</table>")
        elif re.match(r"[-*] ", line):
            items: list[str] = []
            while i < len(lines) and (re.match(r"[-*] ", lines[i])
                                      or (items and lines[i].startswith("  ")
                                          and lines[i].strip())):
                if re.match(r"[-*] ", lines[i]):
                    items.append(lines[i][2:].strip())
                else:  # a wrapped item
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
        elif line.strip():
            para = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("#", "|", "```")) \
                    and not re.match(r"[-*] ", lines[i]):
                para.append(lines[i])
                i += 1
            out.append(f"<p>{_inline(' '.join(para))}</p>")
        else:
            i += 1
    return "\n".join(out)


def _flatten(tree: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flatten(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            # tables of an array, numbered as --set numbers them (facility.streams.0.name)
            out.update(_flatten({str(i): v for i, v in enumerate(value)}, name + "."))
        else:
            out[name] = value
    return out


def _figs(items: list[tuple[str, Figure]], dpi: int) -> str:
    return "\n".join(
        f'<figure><img src="{figure_data_uri(fig, dpi)}" alt="{_esc(title)}">'
        f"<figcaption>{_esc(title)}</figcaption></figure>"
        for title, fig in items
    )


def render(scenario, summary: dict, load, metrics_table: pd.DataFrame, grid_results: dict | None,
           sizing, pv, stabilisation=None) -> str:
    """The whole report page as an HTML string.

    Parameters
    ----------
    scenario : Scenario
        The validated scenario.
    summary : dict
        What ``summary.json`` holds.
    load : aiload.FacilityLoad
        Facility result; ``load.power`` in kW.
    metrics_table : pandas.DataFrame
        ``aiload.metrics.summary`` of ``facility_kw``.
    grid_results : dict or None
        Grid study results by name (``load_mw`` [MW] included).
    sizing : microgrid.Sizing or None
        Sizing result (capacities, costs, dispatch [kW]).
    pv : pandas.Series or None
        PV availability [kW/kWp].
    stabilisation : microgrid.stabilise.Stabilisation or None
        The ``[stabilise]`` study (its section: :mod:`scenarios.report_stabilise`).
    """
    dpi = scenario.outputs.dpi
    parts = [f"<h1>{_esc(scenario.name)}</h1><p>{_esc(scenario.description)}</p>"]
    parts.append('<p class="muted">aiload ' + _esc(summary["aiload_version"]) + " &middot; seed "
                 + _esc(summary["seed"]) + "</p>")
    for section, reason in summary.get("skipped", {}).items():
        parts.append(f'<p class="skip">{_esc(reason)}</p>')

    parts.append(_glance(metrics_table, summary))

    parts.append("<h2>Inputs</h2>")
    given = {k: v for k, v in _flatten(summary["inputs"]).items() if v not in (None, {}, [])}
    parts.append(f"<details><summary>{len(given)} scenario inputs (unset options omitted; "
                 "all of them are in summary.json)</summary>")
    parts.append(_kv(given))
    parts.append("</details>")

    parts.append("<h2>Facility: grid-facing metrics</h2>")
    parts.append(f"<p>Energy over the horizon: {summary['facility']['energy_kwh']:,.0f} kWh.</p>")
    meta = summary["facility"].get("meta", {})
    parts.append(report_parts.inference_note(load.power, meta))
    shown = metrics_table
    if "available" in metrics_table:
        shown = metrics_table[metrics_table["available"].astype(bool)].drop(columns="available")
        parts.append(report_parts.unavailable_note(metrics_table, scenario.facility.freq))
    tz = figures.site_timezone(scenario.site)
    parts.append(_figs(figures.facility_figures(load, tz=tz), dpi))
    parts.append("<details><summary>all grid-facing figures as a table</summary>")
    parts.append(_table(report_parts.readable(shown), max_rows=200))
    parts.append("</details>")

    if summary.get("queue"):  # [[facility]] tables: the queue on one page
        from scenarios import report_queue  # noqa: PLC0415

        parts.append(report_queue.section(summary["queue"], lambda items: _figs(items, dpi)))

    if grid_results is not None:
        parts.append("<h2>Grid studies</h2>")
        for study, result in grid_results.items():
            if study in ("load_mw", "dynamics"):  # dynamics: its own section below
                continue
            parts.append(f"<h3>{_esc(study.replace('_', ' '))}</h3>")
            scalars = {k: v for k, v in summary.get("grid", {}).get(study, {}).items()
                       if not k.endswith("violations")}
            for label, run in report_parts.grid_runs(result).items():
                parts.append(report_parts.violations_html(run, tz, label=label))
            if scalars:
                parts.append(_kv(scalars))
            for name, frame in figures.grid_tables(result, tz=tz,
                                                       results=grid_results).items():
                if frame.empty:  # said in a word rather than drawn as headers without rows
                    parts.append(f"<p class='muted'>{_esc(name)}: none.</p>")
                    continue
                parts.append(f"<p class='muted'>{_esc(name)}</p>"
                             + _table(report_parts.readable(frame)))
        parts.append(_figs(figures.grid_figures(grid_results, scenario.grid, tz=tz), dpi))
        parts.append(report_dynamics.section(grid_results.get("dynamics"), tz,
                                             lambda items: _figs(items, dpi)))

    if sizing is not None:
        parts.append("<h2>Microgrid sizing and dispatch</h2>")
        parts.append(report_parts.microgrid_section(
            summary.get("microgrid", {}),
            report_parts.microgrid_cost_figures(scenario.microgrid)))
        parts.append(_figs(figures.sizing_figures(sizing, pv, tz=tz), dpi))

    if stabilisation is not None:
        from scenarios import report_stabilise  # noqa: PLC0415

        parts.append(report_stabilise.section(stabilisation, summary.get("stabilise", {}), tz,
                                              lambda items: _figs(items, dpi)))

    parts.append("<h2>Provenance</h2>")
    provenance = {"aiload version": summary["aiload_version"], "seed": summary["seed"],
                  "scenario file": summary.get("source") or "(in memory)",
                  "time of day shown in": str(tz)}
    for key in ("preset", "replicates", "events", "wall_s"):
        if key in meta:
            provenance[f"facility_{key}"] = meta[key]
    parts.append(_kv(provenance))
    parts.append(report_parts.profile_sources(meta))
    parts.append('<p class="muted">The full facility specification is in summary.json '
                 "(facility.meta.spec).</p>")
    if CREDITS_PATH.is_file():
        # folded: the sources, licenses and citations are there for whoever looks for them,
        # without taking half the page
        parts.append("<details><summary>Data credits: the measurements behind the profiles, "
                     "their licenses and what to cite</summary>"
                     + markdown_to_html(CREDITS_PATH.read_text(encoding="utf-8"))
                     + "</details>")
    else:
        parts.append("<p>Data credits: see docs/credits.md in the aiload sources.</p>")

    return _page(scenario.name, parts)


#: headline figures shown first: (metric, window, label, kind) with kind "power", "ramp" or ""
GLANCE = (
    ("mean_kw", "", "mean power", "power"),
    ("max_kw", "", "peak power", "power"),
    ("load_factor", "", "load factor", ""),
    ("ramp_up_max_kw_per_s", "1min", "largest 1-min ramp up", "ramp"),
    ("swing_max_kw", "15min", "largest 15-min swing", "power"),
)


def _glance(metrics_table: pd.DataFrame, summary: dict) -> str:
    """Headline figures of the facility as cards (the table below has all of them).

    Shown in MW for a facility whose peak reaches 1 MW, else in kW.
    """
    table = metrics_table.fillna({"window": ""})

    def value(metric: str, window: str = "") -> float:
        rows = table[(table["metric"] == metric) & (table["window"].astype(str) == window)]
        return float(rows["value"].iloc[0]) if len(rows) else float("nan")

    mega = value("max_kw") >= 1000
    scale, unit = (1e-3, "MW") if mega else (1.0, "kW")
    energy = summary["facility"]["energy_kwh"] * scale
    cards = [("energy over the horizon",
              f"{energy:,.0f} {unit}h" if energy >= 100 else f"{energy:,.1f} {unit}h")]
    for metric, window, label, kind in GLANCE:
        v = value(metric, window)
        if not np.isfinite(v):
            continue
        if kind == "power":
            text = f"{v * scale:,.1f} {unit}"
        elif kind == "ramp":
            text = f"{v * scale * 60:,.2f} {unit}/min"
        else:
            text = f"{v:.2f}"
        cards.append((label, text))
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{_esc(v)}</div><div class="k">{_esc(k)}</div></div>'
        for k, v in cards) + "</div>"


def _page(title: str, parts: list[str]) -> str:
    body = "\n".join(parts)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>aiload report: {_esc(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_CSS}</style></head><body><main>\n{body}\n</main></body></html>\n"
    )


#: the metrics the sweep page compares across cases (metric, window)
SWEEP_METRICS = (
    ("mean_kw", ""), ("p99_kw", ""), ("max_kw", ""), ("load_factor", ""),
    ("peak_to_average", ""), ("ramp_up_max_kw_per_s", "1min"), ("swing_max_kw", "15min"),
)


def render_sweep(name: str, cases, replicates: int, comparison: pd.DataFrame,
                 replicate_kw: dict[str, pd.DataFrame], dpi: int = 90, tz: Any = None) -> str:
    """The sweep's ``report.html``: cases, a comparison table and percentile-band figures.

    Parameters
    ----------
    name : str
        Scenario name.
    cases : list of scenarios.sweep.Case
    replicates : int
    comparison : pandas.DataFrame
        ``comparison.csv`` (percentiles across replicates of every metric, per case).
    replicate_kw : dict
        Case id -> ``facility_kw`` of every replicate, one column each [kW].
    tz : str or tzinfo, optional
        The site's time zone: the clock of the figures' time axes (named on them).
    """
    from aiload.metrics import plot_load_duration, plot_percentile_bands

    parts = [f"<h1>{_esc(name)}: sweep</h1>",
             f"<p>{len(cases)} cases &times; {replicates} replicates; replicate <i>k</i> uses "
             "seed = facility.seed + <i>k</i>. Values are percentiles across replicates."
             + (f" Times are on the site's clock ({_esc(tz)})." if tz is not None else "")
             + "</p>"]
    parts.append("<h2>Cases</h2>")
    parts.append(_table(pd.DataFrame(
        [{"case": c.case_id, **{k: str(v) for k, v in c.overrides.items()}} for c in cases])))
    parts.append("<h2>Comparison</h2>")
    rows = []
    window = comparison["window"].fillna("").astype(str)
    pcols = [c for c in comparison.columns if re.fullmatch(r"p\d+(\.\d+)?", str(c))]
    for metric, win in SWEEP_METRICS:
        sel = comparison[(comparison["metric"] == metric) & (window == win)]
        for _, row in sel.iterrows():
            label = f"{metric} ({win})" if win else metric
            rows.append({"case": row["case_id"], "metric": label,
                         **{p: row[p] for p in pcols}})
    if rows:
        table = pd.DataFrame(rows).pivot(index="metric", columns="case", values=pcols[len(pcols) // 2])
        parts.append(f"<p class='muted'>median ({pcols[len(pcols) // 2]}) across replicates; "
                     "all percentiles in comparison.csv</p>")
        parts.append(_table(table.reset_index()))
    figs = []
    for case in cases:
        frame = replicate_kw[case.case_id]
        if tz is not None and getattr(frame.index, "tz", None) is not None:
            frame = frame.tz_convert(tz)
        week = frame[frame.index < frame.index[0] + pd.Timedelta(days=7)]
        if week.shape[1] >= 2:
            figs.append((f"{case.case_id} ({', '.join(f'{k}={v}' for k, v in case.overrides.items())}):"
                         " facility power across replicates, first week [kW]",
                         plot_percentile_bands(week, unit="kW", title=case.case_id)))
    medians = {c.case_id: replicate_kw[c.case_id].median(axis=1).rename(c.case_id) for c in cases}
    figs.append(("Load-duration curves of the per-step median across replicates",
                 plot_load_duration(medians, unit="kW")))
    parts.append("<h2>Figures</h2>")
    parts.append(_figs(figs, dpi))
    return _page(f"{name} sweep", parts)
