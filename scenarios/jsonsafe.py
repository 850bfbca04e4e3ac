"""JSON-safe copies of result values, shared by the runner, the sweep and the report."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value``: NaN/inf -> None, numpy scalars -> Python, times -> ISO."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (pd.Timestamp, pd.Timedelta)) or hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (pd.Series, pd.DataFrame)):
        return f"<table of {len(value)} rows>"
    return str(value)
