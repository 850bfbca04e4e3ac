"""Pieces of ``report.html``: tables with units, and the short explanations a planner needs.

Every number goes through :mod:`scenarios.formatting` (units from the quantity's name,
thousands separators); every figure the run could not produce is said, with why.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from scenarios.formatting import number, quantity, split_unit

__all__ = ["esc", "table", "cell", "quantities", "unavailable_note", "inference_note",
           "microgrid_section", "profile_sources", "cost_table", "microgrid_cost_figures",
           "grid_runs", "violation_record", "violations_html", "zone_name", "listed",
           "readable", "label_of", "header", "plain_numbers"]


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
        if isinstance(value, Mapping) and value:  # a dict, or a result's MappingProxyType
            # the parent's unit applies to its parts: annual_cost_usd -> pv_capital [USD],
            # generator_kw_by_technology -> gas_engine [kW]
            base, _ = split_unit(key)
            suffix = key[len(base):]
            by = re.fullmatch(r"(.+?)(_[a-z]+)_by_(.+)", key)
            if not suffix and by and split_unit("x" + by[2])[1]:
                base, suffix = f"{by[1]}_by_{by[3]}", by[2]
            for sub, v in value.items():
                add(f"{prefix}{base.replace('_', ' ')} › ", f"{sub}{suffix}", v)
            return
        if isinstance(value, (list, tuple)):
            unit = split_unit(key)[1]
            rows.append((prefix + split_unit(key)[0].replace("_", " "),
                         listed(value) + (f" {unit}" if unit and value else "")))
            return
        if isinstance(value, Mapping):  # empty
            rows.append((prefix + split_unit(key)[0].replace("_", " "), "none"))
            return
        if isinstance(value, str) and value in _WORDS:  # quantity = "vm_pu" -> voltage [pu]
            value = label_of(value)
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


def plain_numbers(text: str) -> str:
    """Numbers written with more digits than a reader needs, at :func:`number`'s precision
    (``0.000138889 Hz`` -> ``0.0001389 Hz``)."""
    return re.sub(r"(?<![\w.])-?\d+\.\d{5,}(?:e[-+]?\d+)?(?![\w.])",
                  lambda m: number(float(m.group(0))), text)


def listed(values: Any) -> str:
    """A list as a reader writes it: ``a, b, c``; pairs (outage windows) as ``a – b``; numbers
    through :func:`number`; nested tables as ``key = value``."""
    def one(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return " – ".join(one(x) for x in v) if len(v) == 2 else ", ".join(one(x) for x in v)
        if isinstance(v, Mapping):
            return ", ".join(f"{k} = {one(x)}" for k, x in v.items())
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (float, np.floating)):
            return number(v)
        return str(v)

    if values and all(isinstance(v, (list, tuple)) for v in values):
        return "; ".join(one(v) for v in values)
    return ", ".join(one(v) for v in values)


def readable(frame: pd.DataFrame) -> pd.DataFrame:
    """A result table for a reader: ``loading_pre_percent`` -> ``loading pre [%]`` in the
    headers, quantity names in a ``quantity``/``metric`` column as labels (``vm_pu`` ->
    ``voltage [pu]``, ``curtailed_energy_mwh`` -> ``curtailed energy [MWh]``; the unit left
    out where a ``unit`` column says it)."""
    out = frame.copy()
    has_unit = "unit" in out.columns
    for col in ("quantity", "metric"):
        if col in out.columns:
            out[col] = [label_of(v, with_unit=not has_unit) if isinstance(v, str) else v
                        for v in out[col]]
    return out.rename(columns=header)


#: quantity names with a planner's word for them
_WORDS = {"vm_pu": ("voltage", "pu"), "loading_percent": ("loading", "%"),
          "converged": ("power-flow convergence", "")}


def label_of(name: str, with_unit: bool = True) -> str:
    """``"ramp_up_max_kw_per_s"`` -> ``"ramp up max [kW/s]"``; ``"vm_pu"`` -> ``"voltage [pu]"``."""
    base, unit = _WORDS.get(name) or split_unit(name)
    base = base.replace("_", " ")
    return f"{base} [{unit}]" if unit and with_unit else base


def header(column: Any) -> str:
    """A column name for a reader: ``loading_pre_percent`` -> ``loading pre [%]``; a name
    that is not an identifier (``min V [pu]``) is left as it is."""
    text = str(column)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", text):
        return text
    return label_of(text)


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
        metrics = sorted({label_of(str(m)) for m in rows["metric"]})
        items.append(f"<li><b>{esc(group)}</b> ({esc(', '.join(metrics))}): "
                     f"{esc(plain_numbers(str(note)))}</li>")
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


def microgrid_section(mg: dict, cost_figures: list[dict] | None = None) -> str:
    """Sizes, headline figures, the annual cost by term (USD/yr, USD/MWh served, share) and,
    when a cost set priced the sizing, the figures it took with their sources."""
    if not mg:
        return ""
    costs = mg.get("annual_cost_usd") or {}
    scalars = {k: v for k, v in mg.items() if k != "annual_cost_usd"}
    out = [quantities(scalars)]
    if isinstance(costs, Mapping) and costs:  # a Sizing's MappingProxyType, or a dict
        out.append("<h3>Annual cost by term</h3>" + cost_table(
            costs, float(mg.get("served_energy_mwh_per_year") or 0.0)))
        zero = [k.replace("_", " ") for k, v in costs.items() if float(v) == 0.0]
        if zero:
            out.append(f'<p class="muted">Zero here: {esc(", ".join(zero))}.</p>')
    if cost_figures:
        out.append("<h3>Cost figures used and their sources</h3>"
                   '<p class="muted">In each source\'s own dollars (the sizing moves them to '
                   "the cost set's dollar year with CPI-U). Entry: <i>transcribed</i> as "
                   "published, <i>approximate</i> (read from a chart or rounded, within ~10 %), "
                   "<i>derived</i> from published figures, <i>assumption</i> of the scenario "
                   "file. Check them against the publication before a decision.</p>"
                   + table(pd.DataFrame(cost_figures, columns=["part", "figure", "entry",
                                                               "source"]), max_rows=100))
    return "\n".join(out)


def cost_table(costs: dict, served_mwh_per_year: float) -> str:
    """The annual cost by term as a table: USD/yr, USD/MWh served and share, with a total."""
    total = sum(float(v) for v in costs.values())
    rows = [(k.replace("_", " "), float(v)) for k, v in costs.items() if float(v) != 0.0]
    rows.append(("total", total))

    def per_mwh(v: float) -> str:
        return number(v / served_mwh_per_year) if served_mwh_per_year > 0 else "n/a"

    frame = pd.DataFrame({
        "term": [r[0] for r in rows],
        "USD/yr": [number(round(r[1])) for r in rows],
        "USD/MWh served": [per_mwh(r[1]) for r in rows],
        "share": [f"{r[1] / total:.1%}" if total else "n/a" for r in rows],
    })
    return table(frame)


def microgrid_cost_figures(section: Any) -> list[dict]:
    """The figures a ``[microgrid]`` section takes from its cost set, and its own price
    overrides (entered as assumptions); [] without a cost set."""
    if section is None or getattr(section, "cost_set", None) is None:
        return []
    import microgrid as mg  # noqa: PLC0415

    techs = tuple(t for t in (section.generator_technology,
                              *section.extra_generator_technologies) if t)
    rows = mg.cost_set(section.cost_set).figures(section.cost_year, techs)
    for row in rows:  # technology and fuel keys as words: "generator: gas engine"
        row["part"] = str(row["part"]).replace("_", " ")
    for key, value in section.costs.items():
        part, _, unit = key.partition("_usd_")  # demand_charge_usd_per_kw_month
        unit = unit.removeprefix("per_").replace("_", "/").replace("kw", "kW")
        rows.append({"part": part.replace("_", " "),
                     "figure": f"{value:g} USD/{unit}" if unit else str(value),
                     "entry": "assumption", "source": "the scenario file, [microgrid.costs]"})
    return rows


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


# ------------------------------------------------------------------------------ violations


def zone_name(tz: Any) -> str:
    """The name of a time zone as a reader knows it (``America/Chicago``, ``UTC-05:00``)."""
    return "UTC" if tz is None else str(tz)


def grid_runs(result: Any) -> dict[str, Any]:
    """The time-series power flows in a grid study's result, by label: ``""`` for the study's
    own (a ``GridResult``, or a result's ``grid`` field), ``"open loop"`` etc. for the others."""
    import dataclasses  # noqa: PLC0415

    if hasattr(result, "violation_summary"):
        return {"": result}
    if not dataclasses.is_dataclass(result):
        return {}
    runs = {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if hasattr(value, "violation_summary"):
            runs["" if f.name == "grid" else f.name.replace("_", " ")] = value
    return runs


def _hours_any(run: Any) -> float:
    """Hours [h] with at least one violation (or no power-flow solution) anywhere."""
    lim = run.limits
    bad = ~run.converged.to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        vm = run.vm_pu.to_numpy(dtype=np.float64)
        if vm.size:
            bad |= ((vm < lim.vm_min_pu) | (vm > lim.vm_max_pu)).any(axis=1)
        for frame in (run.line_loading_percent, run.trafo_loading_percent,
                      run.trafo3w_loading_percent):
            if frame.shape[1]:
                bad |= (frame.to_numpy(dtype=np.float64) > lim.loading_max_percent).any(axis=1)
    return float(bad.sum()) * _step_h(run)


def violation_record(run: Any, tz: Any = None) -> dict[str, Any]:
    """What ``summary.json`` says of a power flow's violations: the limits, how many elements
    left them, the hours with any violation and one record per element
    (``GridResult.violation_summary``, worst times on the site's clock)."""
    table = run.violation_summary(tz=tz)
    lim = run.limits
    return {
        "limits": {"vm_min_pu": lim.vm_min_pu, "vm_max_pu": lim.vm_max_pu,
                   "loading_max_percent": lim.loading_max_percent},
        "time_zone": zone_name(tz),
        "elements": int(table.loc[table["kind"] != "network", "element"].nunique()),
        "hours_with_any": _hours_any(run),
        "steps": int(len(run.vm_pu)),
        "by_element": table.to_dict(orient="records"),
    }


_QUANTITY = {"undervoltage": "below", "overvoltage": "above", "overloading": "above",
             "not converged": "no power-flow solution"}


def violations_html(run: Any, tz: Any = None, rows: int = 30, label: str = "") -> str:
    """The violations of a power flow, per bus and branch, as a paragraph and a table:
    hours outside the limits, the worst value and when (on the site's clock)."""
    lim = run.limits
    found = run.violation_summary(tz=tz)
    band = (f"voltage {lim.vm_min_pu:g}–{lim.vm_max_pu:g} pu, loading at most "
            f"{lim.loading_max_percent:g} %")
    what = f"Violations{f' ({esc(label)})' if label else ''}"
    if found.empty:
        return (f"<p><b>{what}: none.</b> Every bus and branch stayed within the limits "
                f"({esc(band)}) at every one of the {len(run.vm_pu):,} steps.</p>")
    hours = _hours_any(run)
    elements = found.loc[found["kind"] != "network", "element"].nunique()
    text = (f"<p><b>{what}: {elements:,} element{'s' if elements != 1 else ''} outside the "
            f"limits ({esc(band)}), {number(hours)} h with at least one violation</b> of "
            f"{number(len(run.vm_pu) * _step_h(run))} h studied.")
    shown = found.head(rows)
    if len(found) > rows:
        text += f" The {rows} longest of {len(found)} are shown; all are in summary.json."
    zone = zone_name(tz if tz is not None else run.vm_pu.index.tz)
    frame = pd.DataFrame({
        "element": shown["element"],
        "violation": [q if q == "not converged" else
                      f"{q} ({_QUANTITY[q]} {number(v)} {u})"
                      for q, v, u in zip(shown["quantity"], shown["limit"], shown["unit"])],
        "hours [h]": shown["hours"].astype(float),
        "steps": shown["steps"].astype(int),
        "worst": [("n/a" if not np.isfinite(w) else f"{number(w)} {u}")
                  for w, u in zip(shown["worst"], shown["unit"])],
        f"worst at ({zone})": pd.DatetimeIndex(shown["worst_time"]).strftime("%Y-%m-%d %H:%M"),
    })
    return text + "</p>" + table(frame, max_rows=rows)


def _step_h(run: Any) -> float:
    index = run.vm_pu.index
    if index.freq is not None:
        return pd.Timedelta(index.freq).total_seconds() / 3600.0
    return float(np.median(np.diff(index.asi8))) / 3.6e12 if len(index) > 1 else 0.0

