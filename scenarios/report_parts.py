"""Pieces of ``report.html``: tables with units, and the short explanations a planner needs.

Every number goes through :mod:`scenarios.formatting` (units from the quantity's name,
thousands separators); every figure the run could not produce is said, with why.
"""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
import pandas as pd

from scenarios.formatting import number, quantity, split_unit

__all__ = ["esc", "table", "cell", "quantities", "unavailable_note", "inference_note",
           "microgrid_section", "profile_sources"]


def esc(value: Any) -> str:
    return html.escape(str(value))


def cell(value: Any) -> str:
    """One ``<td>``: numbers right-aligned with thousands separators, ``n/a`` for NaN."""
    if isinstance(value, (bool, np.bool_)):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (float, np.floating)):
        return f'<td class="num">{number(value)}</td>'
    if isinstance(value, (int, np.integer)):
        return f'<td class="num">{int(value):,}</td>'
    return f"<td>{esc(value)}</td>"


def table(frame: pd.DataFrame, max_rows: int = 60, index: bool = False) -> str:
    """A DataFrame as an HTML table in a wrapper that scrolls rather than widening the page."""
    frame = frame.head(max_rows)
    cols = ([frame.index.name or ""] if index else []) + [str(c) for c in frame.columns]
    rows = ["<div class=\"tw\"><table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>"]
    for label, row in zip(frame.index, frame.itertuples(index=False)):
        cells = ([label] if index else []) + list(row)
        rows.append("<tr>" + "".join(cell(v) for v in cells) + "</tr>")
    return "\n".join(rows) + "</table></div>"


_NUMERIC = re.compile(r"^-?[\d,]+(\.\d+)?(e[-+]?\d+)?( \S+)?$")


def quantities(mapping: dict[str, Any]) -> str:
    """A two-column table of named figures, each with the unit its name carries.

    Nested mappings become indented rows under their parent (``annual cost › grid energy``);
    lists are joined with commas.
    """
    rows: list[tuple[str, str]] = []

    def add(prefix: str, key: str, value: Any) -> None:
        if isinstance(value, dict):
            # the parent's unit applies to its parts: annual_cost_usd -> pv_capital [USD]
            base, _ = split_unit(key)
            suffix = key[len(base):]
            for sub, v in value.items():
                add(f"{prefix}{base.replace('_', ' ')} › ", f"{sub}{suffix}", v)
            return
        if isinstance(value, (list, tuple)):
            rows.append((prefix + split_unit(key)[0].replace("_", " "),
                         ", ".join(str(v) for v in value)))
            return
        label, text = quantity(key, value)
        unit = split_unit(key)[1]
        rows.append((prefix + label + (f"\0{unit}" if unit else ""), text))

    for key, value in mapping.items():
        add("", str(key), value)
    # a label that two quantities share (battery_kwh, battery_kw) keeps its unit to tell them apart
    bare = [k.split("\0")[0] for k, _ in rows]
    rows = [(k.replace("\0", " [") + "]" if bare.count(k.split("\0")[0]) > 1 else k.split("\0")[0], v)
            for k, v in rows]
    num = ' class="num"'
    body = "".join(f"<tr><td>{esc(k)}</td><td{num if _NUMERIC.match(v) else ''}>{esc(v)}</td></tr>"
                   for k, v in rows)
    return f'<div class="tw"><table><tr><th>quantity</th><th>value</th></tr>{body}</table></div>'


def unavailable_note(metrics_table: pd.DataFrame, freq: str) -> str:
    """Which grid-facing figures the run's resolution cannot support, grouped, and how to get
    them (a finer ``facility.freq``)."""
    if "available" not in metrics_table:
        return ""
    missing = metrics_table[~metrics_table["available"].astype(bool)]
    if missing.empty:
        return ""
    items = []
    for (group, note), rows in missing.groupby(["group", "note"], sort=False, dropna=False):
        metrics = sorted({str(m) for m in rows["metric"]})
        items.append(f"<li><b>{esc(group)}</b> ({esc(', '.join(metrics))}): {esc(note)}</li>")
    return (f'<details><summary>{len(missing)} figures are not available at the run\'s '
            f"{esc(freq)} resolution (why, and how to get them)</summary><ul>{''.join(items)}</ul>"
            f"<p class=\"muted\">A window or band finer than the step cannot be measured from "
            f"interval means of that step: run the facility at a finer <code>facility.freq</code> "
            f"(e.g. <code>--set facility.freq=1s</code> over a shorter horizon) to get them."
            f"</p></details>")


def inference_note(power: pd.DataFrame | None, meta: dict) -> str:
    """The inference demand that was not served (and queued), as a paragraph, when there is
    an inference service."""
    if power is None or "requests_per_s" not in power or "served_requests_per_s" not in power:
        return ""
    step_s = (power.index[1] - power.index[0]).total_seconds() if len(power) > 1 else 0.0
    demanded = float(power["requests_per_s"].sum()) * step_s
    served = float(power["served_requests_per_s"].sum()) * step_s
    if demanded <= 0:
        return ""
    unserved = max(demanded - served, 0.0)
    share = unserved / demanded
    hours = float((power["served_requests_per_s"] < power["requests_per_s"] * (1 - 1e-9)).sum()
                  * step_s / 3600)
    text = (f"Inference demand: {demanded:,.0f} requests over the horizon, "
            f"{served:,.0f} served; <b>{unserved:,.0f} ({share:.2%}) not served</b>")
    if unserved > 0:
        text += (f", in intervals totalling {number(hours)} h where demand exceeded what the "
                 "serving nodes could answer within the latency target")
    return f"<p>{text}.</p>"


def microgrid_section(mg: dict) -> str:
    """Sizes, headline figures and the annual cost by term (with shares) of a sizing."""
    if not mg:
        return ""
    costs = mg.get("annual_cost_usd") or {}
    scalars = {k: v for k, v in mg.items() if k != "annual_cost_usd"}
    out = [quantities(scalars)]
    if isinstance(costs, dict) and costs:
        total = sum(float(v) for v in costs.values())
        rows = [(k.replace("_", " "), float(v)) for k, v in costs.items() if float(v) != 0.0]
        frame = pd.DataFrame(rows, columns=["term", "USD/yr"])
        frame["share"] = [f"{v / total:.1%}" if total else "n/a" for v in frame["USD/yr"]]
        zero = [k.replace("_", " ") for k, v in costs.items() if float(v) == 0.0]
        out.append("<h3>Annual cost by term</h3>" + table(frame))
        if zero:
            out.append(f'<p class="muted">Zero here: {esc(", ".join(zero))}.</p>')
    return "\n".join(out)


_SOURCE = re.compile(r"^(?P<name>.+?) \((?P<source>.*); (?P<kind>measured|synthesised)\)$")


def profile_sources(meta: dict) -> str:
    """The job profiles the run used: workload, node count, profile, its source and whether
    its time series is measured or synthesised."""
    sources = meta.get("profile_sources")
    if not isinstance(sources, dict):
        return ""
    if not sources:
        return ('<p class="muted">No batch-job profiles: this facility runs no training or '
                "fine-tuning jobs; its IT power comes from the inference power curve and idle "
                "nodes (see the facility specification in summary.json).</p>")
    rows = []
    for key, text in sources.items():
        workload, _, nodes = str(key).partition("@")
        m = _SOURCE.match(str(text))
        name, source, kind = (m["name"], m["source"], m["kind"]) if m else (str(text), "", "")
        rows.append({"workload": workload, "nodes": nodes, "profile": name, "series": kind,
                     "source": source})
    return "<h3>Job profiles used</h3>" + table(pd.DataFrame(rows), max_rows=200)
