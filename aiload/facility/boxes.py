"""Busy and queued series: per-bin integrals of boxes ``[s_j, e_j)`` with weights.

With ``weight`` = nodes on ``[start, end)`` the integral per bin is the busy node-seconds;
with weight 1 on ``[arrival, start)`` the queued job-seconds. :func:`box_seconds_per_bin` is
what the model uses; :func:`ramp_at_edges` is the cumulative form at bin edges.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_seconds_per_bin", "ramp_at_edges"]


def ramp_at_edges(
    edges_s: np.ndarray, start_s: np.ndarray, end_s: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """``Σ_j w_j·(min(t, e_j) − s_j)⁺`` at every edge: integral of boxcar counts [unit·s].

    With ``weight`` = nodes its ``diff`` is the busy node-seconds per bin; with weight 1 on
    ``[arrival, start)`` the queued job-seconds. Exact for any placement of the boxes.
    """
    n = len(edges_s)
    weight = np.broadcast_to(np.asarray(weight, dtype=np.float64), np.shape(start_s))
    at = np.concatenate((np.searchsorted(edges_s, start_s, side="left"),
                         np.searchsorted(edges_s, end_s, side="left")))
    # bincount adds in input order, as np.add.at did (same sums), several times faster
    slope = np.bincount(at, weights=np.concatenate((weight, -weight)), minlength=n + 1)
    offset = np.bincount(at, weights=np.concatenate((-weight * start_s, weight * end_s)),
                         minlength=n + 1)
    return np.cumsum(slope[:-1]) * edges_s + np.cumsum(offset[:-1])


def box_seconds_per_bin(
    start_s: np.ndarray, end_s: np.ndarray, weight: np.ndarray, *, step_s: float, n_bins: int,
) -> np.ndarray:
    """``Σ_j w_j·|[k·f, (k+1)·f) ∩ [s_j, e_j)|`` for every bin ``k < n_bins`` [unit·s].

    The per-bin form of :func:`ramp_at_edges` on the edges ``k·f`` (busy node-seconds with
    ``weight`` = nodes, queued job-seconds with weight 1), computed without the cumulative
    ramp: bins a box covers whole get ``w·f`` from a running count of the boxes open there,
    its first and last bin get their parts. No large cumulative sums cancel, and each box
    adds exactly ``w·(e − s)`` over the bins (clipped to ``[0, n_bins·f)``) however floor
    rounding places its ends. Boxes with ``e <= s`` add nothing.
    """
    if not np.isfinite(step_s) or step_s <= 0 or int(n_bins) != n_bins or n_bins < 0:
        raise ValueError(f"box_seconds_per_bin: expected step_s > 0 [s] and a whole n_bins >= 0, "
                         f"got step_s={step_s!r}, n_bins={n_bins!r}.")
    if np.shape(start_s) != np.shape(end_s):
        raise ValueError(f"box_seconds_per_bin: start_s and end_s must have one shape (one box "
                         f"each), got {np.shape(start_s)} and {np.shape(end_s)}.")
    out = np.zeros(int(n_bins), dtype=np.float64)
    span_s = n_bins * step_s
    s = np.clip(np.asarray(start_s, dtype=np.float64), 0.0, span_s)
    e = np.clip(np.asarray(end_s, dtype=np.float64), 0.0, span_s)
    w = np.broadcast_to(np.asarray(weight, dtype=np.float64), s.shape)
    keep = e > s
    if not keep.all():
        s, e, w = s[keep], e[keep], w[keep]
    if len(s) == 0 or n_bins == 0:
        return out
    ks = np.minimum((s / step_s).astype(np.int64), n_bins - 1)
    ke = np.minimum((e / step_s).astype(np.int64), n_bins)
    ke = np.maximum(ke, ks)  # float rounding never puts an end before its start's bin
    one = ke == ks
    at = np.concatenate((ks + 1, ke))
    # whole bins ks+1 … ke−1: +w from ks+1, −w from ke (a running count of open boxes)
    w_whole = np.where(one, 0.0, w)
    count = np.bincount(at, weights=np.concatenate((w_whole, -w_whole)), minlength=n_bins + 2)
    np.cumsum(count[:n_bins], out=out)
    out *= step_s
    first = np.where(one, e - s, (ks + 1) * step_s - s)  # the start bin's part
    last = np.where(one, 0.0, e - ke * step_s)  # the end bin's part (0 when ke == n_bins)
    at[:len(ks)] = ks
    out += np.bincount(at, weights=np.concatenate((w * first, w * last)),
                       minlength=n_bins + 1)[:n_bins]
    return out
