"""Goodness-of-fit helpers shared by the scaling fits."""

from __future__ import annotations

import numpy as np
import pandas as pd

from aiload.errors import InputError

__all__ = ["r_squared", "residual_frame", "positive_array"]


def r_squared(observed: np.ndarray, fitted: np.ndarray) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` [-]; NaN with fewer than 2 points."""
    observed = np.asarray(observed, dtype=float)
    fitted = np.asarray(fitted, dtype=float)
    if observed.size < 2:
        return float("nan")
    ss_tot = float(((observed - observed.mean()) ** 2).sum())
    ss_res = float(((observed - fitted) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def residual_frame(x_name: str, x, quantity: str, observed, fitted) -> pd.DataFrame:
    """``x_name, quantity, observed, fitted, residual`` (observed - fitted) of one fitted quantity."""
    observed = np.asarray(observed, dtype=float)
    fitted = np.asarray(fitted, dtype=float)
    return pd.DataFrame(
        {x_name: np.asarray(x), "quantity": quantity, "observed": observed,
         "fitted": fitted, "residual": observed - fitted}
    )


def positive_array(values, what: str, unit: str) -> np.ndarray:
    """``values`` as a float array; an error naming ``what`` and ``unit`` unless all are finite > 0."""
    arr = np.asarray(values, dtype=float)
    if np.any(~np.isfinite(arr)) or np.any(arr <= 0):
        raise InputError(f"{what} must be finite and > 0 [{unit}], got {values!r}.")
    return arr
