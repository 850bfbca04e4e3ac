"""Checks of ``[microgrid.options]`` made when a scenario is loaded: the keywords of
``microgrid.size()`` the table may hold and the form of its outage windows (both were refused
only by ``microgrid.size()``, after the facility run; an unknown key as a TypeError)."""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Mapping
from typing import Any

from scenarios.messages import as_typed

__all__ = ["options_problem"]

#: keyword arguments of microgrid.size() that [microgrid] fills itself -> where they are written
SET_BY_SECTION = {
    "load_kw": "the facility run", "pv_availability": "the [microgrid.pv] table and [site]",
    "costs": "the [microgrid.costs] table (or cost_set)", "battery": "the [microgrid.battery] table",
    "generator": "the [microgrid.generator] table (or generator_technology)",
    "carbon": "the [microgrid.carbon] table", "import_limit_kw": "[microgrid] import_limit_kw",
    "max_dump_load_kw": "[microgrid] max_dump_load_kw",
    "allow_simultaneous_charge_discharge": "[microgrid] allow_simultaneous_charge_discharge",
    "extra_generators": "[microgrid] extra_generator_technologies",
    "generator_name": "[microgrid] generator_technology",
    "progress": "aiload run itself (its progress lines)",
}

_EXAMPLE = "outages = [[2025-07-15T16:00:00Z, 2025-07-16T00:00:00Z]]"


def options_problem(options: Mapping[str, Any]) -> tuple[tuple[str, ...], str] | None:
    """The first problem of a ``[microgrid.options]`` table, or None.

    Returns
    -------
    tuple or None
        ``(field, message)``: the field path it concerns (for its line or ``--set``) and a
        message with what was received, what is expected and how to fix it.
    """
    import inspect  # noqa: PLC0415

    from microgrid import size  # noqa: PLC0415  (pyomo: only with a [microgrid] table)

    allowed = sorted(n for n in inspect.signature(size).parameters if n not in SET_BY_SECTION)
    for key in options:
        field = ("microgrid", "options", key)
        if key in SET_BY_SECTION:
            return field, (
                f"key 'microgrid.options.{key}' is set by {SET_BY_SECTION[key]}, not in "
                f"[microgrid.options]; move it there. [microgrid.options] takes: "
                f"{', '.join(allowed)}."
            )
        if key not in allowed:
            near = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            return field, (
                f"unknown key 'microgrid.options.{key}': not a keyword of microgrid.size()."
                f"{hint} Allowed here: {', '.join(allowed)}."
            )
    return _outages_problem(options.get("outages"))


def _outages_problem(outages: Any) -> tuple[tuple[str, ...], str] | None:
    """``outages``: a list of [start, end] pairs of offset date-times, start before end."""
    if outages is None:
        return None
    field = ("microgrid", "options", "outages")
    received = f"field 'microgrid.options.outages' = {as_typed(outages)}"
    if not isinstance(outages, list):
        return field, f"{received}: expected a list of [start, end] pairs, e.g. {_EXAMPLE}."
    for i, window in enumerate(outages):
        times = window if isinstance(window, list) and len(window) == 2 else None
        if times is not None and all(isinstance(t, str) for t in times):
            try:
                times = [dt.datetime.fromisoformat(t) for t in times]  # 'Z' read as UTC
            except ValueError:
                times = None
        if times is None or not all(isinstance(t, dt.datetime) for t in times):
            problem = "is not a [start, end] pair of date-times"
        elif any(t.tzinfo is None or t.utcoffset() is None for t in times):
            problem = "has a date-time without a time zone"
        elif times[1] <= times[0]:
            problem = "ends before it starts"
        else:
            continue
        return field, (
            f"{received}: outage {i} = {as_typed(window)} {problem}; expected [start, end] with "
            f"start before end, both with a time zone, e.g. {_EXAMPLE}."
        )
    return None
