"""Rows of the tidy metrics table: every figure with its window, unit and availability."""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["COLUMNS", "row", "unavailable", "to_frame", "window_label"]

#: columns of every table :func:`aiload.metrics.summary` returns
COLUMNS = ["group", "metric", "window", "value", "unit", "available", "note"]


def row(group: str, metric: str, value: float, unit: str, window: str = "", note: str = "") -> dict:
    """One available figure."""
    return {
        "group": group,
        "metric": metric,
        "window": window,
        "value": float(value),
        "unit": unit,
        "available": True,
        "note": note,
    }


def unavailable(group: str, metric: str, unit: str, window: str, note: str) -> dict:
    """A figure the input cannot support: NaN value, ``available=False`` and the reason."""
    return {
        "group": group,
        "metric": metric,
        "window": window,
        "value": math.nan,
        "unit": unit,
        "available": False,
        "note": note,
    }


def to_frame(rows: list[dict]) -> pd.DataFrame:
    """The rows as a DataFrame with the standard columns."""
    return pd.DataFrame(rows, columns=COLUMNS)


def window_label(seconds: float) -> str:
    """A short label for a window length, e.g. 5 -> '5s', 60 -> '1min', 900 -> '15min'."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}min"
    return f"{seconds:g}s"
