"""The report's interconnection-queue section: who gets the request, who is cut, by what.

Built from ``summary.json``'s ``queue`` (:func:`scenarios.queue_study.summary_of`), so the
page and the file say the same: a table per facility in queue order and a figure of the
requested against the allocated MW, coloured by the binding constraint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from scenarios import report_parts

__all__ = ["section", "allocation_figure", "curtailment_figure", "flexible_section",
           "render_sweep"]

_QUANTITY = {"vm_pu": "voltage", "loading_percent": "loading",
             "converged": "power-flow convergence"}
_COLOURS = {"voltage": "#c0392b", "loading": "#e67e22", "power-flow convergence": "#7d3c98"}


def _binding(row: Mapping[str, Any]) -> str:
    return _QUANTITY.get(row.get("binding_quantity"), str(row.get("binding_quantity")))


def allocation_figure(rows: list[Mapping[str, Any]]) -> Figure:
    """Requested (outline) and allocated (filled, coloured by what binds just above the
    facility's hosting size) MW per facility, in queue order [MW]."""
    fig = Figure(figsize=(9, 4))
    ax = fig.add_subplot()
    x = range(len(rows))
    ax.bar(x, [r["requested_mw"] for r in rows], color="none", edgecolor="#52606d",
           lw=1.2, label="requested (peak at grid.freq)")
    colours = [_COLOURS.get(_binding(r), "#3e7cb1") for r in rows]
    ax.bar(x, [r["allocated_mw"] for r in rows], color=colours, alpha=0.85, width=0.6)
    for i, r in enumerate(rows):
        where = "granted" if r["granted"] else f"cut: {r['binding_element']}"
        ax.annotate(where, (i, r["allocated_mw"]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=7)
    ax.set_xticks(list(x), [f"{i + 1}. {r['name']}\n(bus {r['bus']})" for i, r in
                            enumerate(rows)], fontsize=7)
    ax.set_ylabel("MW")
    ax.set_title("Requested and allocated MW in queue order (fill: what binds just above)")
    from matplotlib.patches import Patch  # noqa: PLC0415

    kinds = sorted({_binding(r) for r in rows})
    ax.legend(handles=[Patch(facecolor="none", edgecolor="#52606d", label="requested")]
              + [Patch(color=_COLOURS.get(k, "#3e7cb1"), label=f"allocated; binding {k}")
                 for k in kinds], fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def _table(rows: list[Mapping[str, Any]]) -> pd.DataFrame:
    out = []
    for i, r in enumerate(rows):
        row = {"queue": i + 1, "facility": r["name"], "bus": r["bus"], "kind": r["kind"],
               "site clock": r["timezone"], "seed": str(r["seed"]),  # a label: no commas
               "requested MW (peak)": r["requested_mw"]}
        if "allocated_mw" in r:
            row.update({"allocated MW": r["allocated_mw"],
                        "granted": "yes" if r["granted"] else "cut",
                        "hosting MW (largest that fits)": r["hosting_mw"],
                        "binding just above it": f"{_binding(r)} at {r['binding_element']}",
                        "value / limit": f"{r['binding_value']:.4g} / {r['binding_limit']:g}",
                        "common-scaling MW": r["common_mw"]})
        if "violation_hours_at_bus" in r:
            row.update({"violation h at its bus": r["violation_hours_at_bus"],
                        "lowest V at its bus [pu]": r["min_vm_pu_at_bus"]})
        out.append(row)
    return pd.DataFrame(out)


def curtailment_figure(rows: list[Mapping[str, Any]]) -> Figure:
    """Each facility's curtailed share of its energy under the shared headroom, in queue
    order [%], labelled with its curtailed hours and binding element."""
    fig = Figure(figsize=(9, 3.6))
    ax = fig.add_subplot()
    x = range(len(rows))
    shares = [r["flexible"]["curtailed_share_percent"] for r in rows]
    ax.bar(x, shares, color="#3e7cb1", width=0.6)
    for i, r in enumerate(rows):
        f = r["flexible"]
        text = (f"{f['curtailed_h']:g} h, {f['events']} events\n{f['binding_element']}"
                if f["curtailed_h"] else "never curtailed")
        ax.annotate(text, (i, shares[i]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=7)
    ax.set_xticks(list(x), [f"{i + 1}. {r['name']}\n(bus {r['bus']})" for i, r in
                            enumerate(rows)], fontsize=7)
    ax.set_ylabel("curtailed [% of its energy]")
    ax.set_ylim(0, max(max(shares) * 1.35, 1.0))
    ax.set_title("Curtailment of each facility under the headroom shared in queue order")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def _flexible_table(rows: list[Mapping[str, Any]]) -> pd.DataFrame:
    out = []
    for i, r in enumerate(rows):
        row: dict[str, Any] = {"queue": i + 1, "facility": r["name"], "bus": r["bus"]}
        f = r.get("flexible")
        if f is not None:
            row.update({"firm MW (smallest headroom)": f["firm_mw"],
                        "energy MWh": f["energy_mwh"], "curtailed MWh": f["curtailed_mwh"],
                        "curtailed %": f["curtailed_share_percent"],
                        "curtailed h": f["curtailed_h"], "events": f["events"],
                        "binding": f["binding_element"] or "none"})
        c = r.get("cosimulate")
        if c is not None:
            row.update({"closed loop: MWh": c["energy_mwh"],
                        "closed loop: curtailed MWh": c["curtailed_mwh"],
                        "closed loop: events": c["events"]})
        out.append(row)
    return pd.DataFrame(out)


def flexible_section(queue: Mapping[str, Any],
                     figs: Callable[[list[tuple[str, Figure]]], str]) -> list[str]:
    """The queue's flexible_interconnection and cosimulate results (empty when neither ran)."""
    rows = queue["facilities"]
    if not rows or not ("flexible" in rows[0] or "cosimulate" in rows[0]):
        return []
    parts = ["<h3>Flexibility of the queue</h3>"]
    text = "<p>"
    if "flexible" in rows[0]:
        text += ("Flexible interconnection: at every step each facility in queue order may draw "
                 "the largest power that breaks no limit with those before it at their allowed "
                 "power (grid.flexible_interconnection with the mapping bus &rarr; series); the "
                 "rest is curtailed. ")
    co = queue.get("cosimulate")
    if co is not None:
        text += (f"Closed loop (grid.cosimulate with the mapping bus &rarr; spec, "
                 f"{report_parts.esc(co['start'][:16])} to {report_parts.esc(co['end'][:16])} "
                 f"UTC, loops closed in queue order): <b>{co['violation_steps']:,}</b> of "
                 f"{co['steps']:,} steps with a violation, against "
                 f"{co['open_loop_violation_steps']:,} without the loop.")
    parts.append(text + "</p>")
    parts.append(report_parts.table(report_parts.readable(_flexible_table(rows))))
    if "flexible" in rows[0]:
        parts.append(figs([("Curtailed share of each facility's energy under the shared "
                            "headroom, in queue order", curtailment_figure(rows))]))
    return parts


def section(queue: Mapping[str, Any], figs: Callable[[list[tuple[str, Figure]]], str]) -> str:
    """The queue section's HTML; ``figs`` renders ``(caption, Figure)`` items."""
    rows = queue["facilities"]
    parts = ["<h2>Interconnection queue</h2>"]
    text = (f"<p>{len(rows)} facilities in queue order, each on its own seed "
            f"({report_parts.esc(queue['seeds'])} seeds) and site clock, on one UTC axis. "
            "The series above and the grid studies below are their total; each facility's "
            "own series is in facility_queue.parquet.")
    if rows and "allocated_mw" in rows[0]:
        requested = sum(r["requested_mw"] for r in rows)
        allocated = sum(r["allocated_mw"] for r in rows)
        text += (f" Allocated in queue order (each with those before it connected at their "
                 f"allocations): <b>{allocated:,.1f} of {requested:,.1f} MW</b>; "
                 f"{sum(r['granted'] for r in rows)} of {len(rows)} granted in full. All "
                 f"requests together scale by at most <b>{queue['common_scale']:.3f}</b> "
                 f"(binding: {report_parts.esc(_QUANTITY.get(queue['common_quantity'], ''))} at "
                 f"{report_parts.esc(queue['common_element'])}).")
    parts.append(text + "</p>")
    parts.append(report_parts.table(report_parts.readable(_table(rows))))
    if rows and "allocated_mw" in rows[0]:
        parts.append(figs([("Requested and allocated MW per facility in queue order, coloured "
                            "by the binding constraint", allocation_figure(rows))]))
    parts.extend(flexible_section(queue, figs))
    return "\n".join(parts)


def render_sweep(name: str, cases, comparison: pd.DataFrame, out_dir,
                 figs: Callable[[list[tuple[str, Figure]]], str],
                 page: Callable[[str, list[str]], str]) -> str:
    """A queue sweep's ``report.html``: the cases, the allocated MW of every facility per
    case, and each case's allocation figure (from its ``summary.json``); ``figs`` renders
    figures, ``page`` wraps the parts in the report's page."""
    import json  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    esc = report_parts.esc
    parts = [f"<h1>{esc(name)}: queue sweep</h1>",
             f"<p>{len(cases)} variants of the interconnection queue, each a whole "
             "<code>aiload run</code> (its files in cases/CASE/).</p>", "<h2>Cases</h2>",
             report_parts.table(pd.DataFrame([{"case": c, **{k: str(v) for k, v in values.items()}}
                                              for c, values, _ in cases]))]
    if "allocated_mw" in comparison and comparison["allocated_mw"].notna().any():
        pivot = comparison.pivot_table(index="name", columns="case_id", values="allocated_mw",
                                       sort=False)
        parts += ["<h2>Allocated MW per facility and case</h2>",
                  report_parts.table(pivot.round(2).reset_index().rename(
                      columns={"name": "facility"}))]
    for case_id, values, _ in cases:
        summary = json.loads((Path(out_dir) / "cases" / case_id / "summary.json").read_text())
        rows = summary["queue"]["facilities"]
        if rows and "allocated_mw" in rows[0]:
            label = ", ".join(f"{k} = {v}" for k, v in values.items()) or "the file's values"
            parts.append(figs([(f"{case_id} ({label})", allocation_figure(rows))]))
    return page(f"{name} queue sweep", parts)
