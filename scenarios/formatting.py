"""Numbers as a planner reads them: units from the quantity's name, thousands separators.

Every figure in aiload carries its unit in its name (``battery_kwh``, ``lcoe_usd_per_mwh``,
``min_vm_pu``); :func:`quantity` turns such a name and a value into a label and a text with
that unit, at a precision that suits the size of the number (no 15-digit floats, no ``-0``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["UNITS", "split_unit", "number", "quantity"]

#: name suffixes and the unit they mean, longest first (``_usd_per_mwh`` before ``_mwh``)
UNITS: tuple[tuple[str, str], ...] = (
    ("_usd_per_mwh", "USD/MWh"),
    ("_mwh_per_year", "MWh/yr"),
    ("_t_per_year", "t/yr"),
    ("_kw_per_s", "kW/s"),
    ("_mw_per_min", "MW/min"),
    ("_per_h", "/h"),
    ("_per_s", "/s"),
    ("_percent", "%"),
    ("_usd", "USD"),
    ("_kwp", "kWp"),
    ("_kwh", "kWh"),
    ("_mwh", "MWh"),
    ("_kw", "kW"),
    ("_mw", "MW"),
    ("_mvar", "MVAr"),
    ("_mva", "MVA"),
    ("_pu", "pu"),
    ("_hz", "Hz"),
    ("_s", "s"),
    ("_h", "h"),
)


def split_unit(name: str) -> tuple[str, str]:
    """``"battery_kwh"`` -> ``("battery", "kWh")``; a name without a unit suffix -> ``(name, "")``."""
    for suffix, unit in UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], unit
    return name, ""


def number(value: float) -> str:
    """A float at a precision that suits its size: ``71,020,644``, ``107.3``, ``0.0123``.

    Thousands separators from 1,000 up; 4 significant digits below; ``0`` for zero and
    negative zero; ``n/a`` for NaN and infinities.
    """
    value = float(value)
    if not math.isfinite(value):
        return "n/a"
    if value == 0.0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def quantity(name: str, value: Any) -> tuple[str, str]:
    """A row of a key-value table: the label (name without its unit, spaces for underscores)
    and the value as text with its unit.

    >>> quantity("lcoe_usd_per_mwh", 107.33167510575434)
    ('lcoe', '107.3 USD/MWh')
    >>> quantity("export_revenue_usd", -0.0)
    ('export revenue', '0 USD')
    >>> quantity("cost_year", 2025)
    ('cost year', '2025')
    """
    base, unit = split_unit(str(name))
    label = base.replace("_", " ")
    if isinstance(value, (bool, np.bool_)) or value is None:
        return label, "n/a" if value is None else ("yes" if value else "no")
    if isinstance(value, (int, np.integer)):
        # a year or a seed is a label, not a count: 2025, not 2,025
        plain = base.endswith(("year", "seed")) and not base.endswith("per_year")
        text = str(int(value)) if plain else f"{int(value):,}"
    elif isinstance(value, (float, np.floating)):
        text = number(value)
    elif isinstance(value, pd.Timestamp):
        text = value.isoformat()
    else:
        return label, str(value)
    return label, f"{text} {unit}".rstrip() if text != "n/a" else text
