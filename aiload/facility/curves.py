"""Per-node cumulative energy of a profile, :class:`CumulativeEnergy`, and the exact-edge
reference sum :func:`job_energy_at_edges`.

``E(τ)``, the energy one node of a job has used ``τ`` seconds after its start, is piecewise
linear between the profile's samples (so exact there), 0 before the start, held after the end,
and the profile repeats cyclically when the job is longer than it. The energy of a job of
``n`` nodes started at ``s`` in bin ``[t_k, t_{k+1})`` is ``n·(E(t_{k+1} − s) − E(t_k − s))``.

:func:`job_energy_at_edges` evaluates ``E`` at every bin edge inside every job at the exact
starts: ~10x slower at fine steps than the placed kernels of
:mod:`aiload.facility.summation`, kept as the reference the tests compare with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiload.facility._compiled import numba_loops as _numba_loops
from aiload.profiles._profile import Profile

__all__ = ["CumulativeEnergy", "job_energy_at_edges", "AUTO_NUMBA_MIN_POINTS",
           "POINTS_PER_CHUNK"]

#: interior edge evaluations per vectorised chunk (bounds temporary memory to ~0.5 GB)
POINTS_PER_CHUNK = 8_000_000
#: below this many interior evaluations ``method="auto"`` stays with numpy: importing numba
#: and compiling the loop (1–3 s, once per process) costs more than it saves
AUTO_NUMBA_MIN_POINTS = 2_000_000


@dataclass(frozen=True)
class CumulativeEnergy:
    """Cumulative per-node energy of one profile replicate, repeated to ``duration_s``.

    Attributes
    ----------
    knots_s : ndarray
        Profile interval edges ``0, Δ, 2Δ, …, L`` [s].
    energy_j : ndarray
        Cumulative energy at the knots [J].
    duration_s : float
        Job length [s]; beyond ``L`` the profile repeats cyclically.
    """

    knots_s: np.ndarray
    energy_j: np.ndarray
    duration_s: float

    @classmethod
    def from_profile(cls, profile: Profile, replicate: int, duration_s: float | None = None):
        power = np.asarray(profile.power_w.to_numpy(dtype=np.float64)[:, replicate])
        energy = np.concatenate(([0.0], np.cumsum(power * profile.step_s)))
        knots = np.arange(len(energy), dtype=np.float64) * profile.step_s
        return cls(knots, energy, float(duration_s or profile.duration_s))

    @property
    def total_j(self) -> float:
        """Energy of one node over the whole job [J]."""
        return float(self(np.array([self.duration_s]))[0])

    def __call__(self, tau_s: np.ndarray) -> np.ndarray:
        """Cumulative energy at elapsed times ``tau_s`` [J]: 0 before 0, held after the end."""
        # knots are uniform, so the interval is found by division, not a binary search
        step = self.knots_s[1]
        period = self.knots_s[-1]
        e = self.energy_j
        last = len(e) - 2
        tau = np.clip(tau_s, 0.0, self.duration_s)  # 0 before the start, held after the end
        if self.duration_s > period:
            cycles = np.floor(tau / period)
            pos = (tau - cycles * period) / step
            k = np.minimum(pos.astype(np.int64), last)
            return cycles * e[-1] + e[k] + (pos - k) * (e[k + 1] - e[k])
        pos = tau / step
        k = np.minimum(pos.astype(np.int64), last)
        slope = self.slope_j
        return e[k] + (pos - k) * slope[k]

    @property
    def slope_j(self) -> np.ndarray:
        """Energy per profile interval [J] (cached)."""
        cached = self.__dict__.get("_slope")
        if cached is None:
            cached = np.diff(self.energy_j)
            object.__setattr__(self, "_slope", cached)
        return cached


def _interior_numba():
    """The compiled interior loop of :func:`job_energy_at_edges`, or None without numba."""
    loops = _numba_loops()
    return None if loops is None else loops.interior


def job_energy_at_edges(
    edges_s: np.ndarray, start_s: np.ndarray, nodes: np.ndarray, curve: CumulativeEnergy,
    *, method: str = "auto",
) -> np.ndarray:
    """Cumulative energy of jobs sharing one profile curve at every edge [J].

    Parameters
    ----------
    edges_s : ndarray
        Uniformly spaced, increasing bin edges [s].
    start_s, nodes : ndarray
        Start time [s] and node count [-] of each job.
    curve : CumulativeEnergy
    method : {"auto", "numba", "numpy"}
        Interior evaluation: compiled loop or chunked numpy. ``"auto"`` uses the compiled
        loop when numba is importable and the call has at least
        :data:`AUTO_NUMBA_MIN_POINTS` interior evaluations. Both evaluate the same formula;
        sums differ only by float rounding order.

    Returns
    -------
    ndarray of float64, shape ``edges_s.shape``
        ``Σ_j nodes_j·E(edge − s_j)`` [J]; its ``diff`` is the energy per bin.
    """
    if method not in ("auto", "numba", "numpy"):
        raise ValueError(f"method: expected 'auto', 'numba' or 'numpy', got {method!r}.")
    n_edges = len(edges_s)
    out = np.zeros(n_edges, dtype=np.float64)
    if len(start_s) == 0:
        return out
    step = edges_s[1] - edges_s[0] if n_edges > 1 else 1.0
    end_s = start_s + curve.duration_s
    first = np.searchsorted(edges_s, start_s, side="right")  # first edge strictly inside
    last = np.searchsorted(edges_s, end_s, side="left")  # first edge at/after the end
    small = int(np.clip(last - first, 0, None).sum()) < AUTO_NUMBA_MIN_POINTS
    kernel = None if method == "numpy" or (method == "auto" and small) else _interior_numba()
    if kernel is None and method == "numba":
        raise ImportError("job_energy_at_edges(method='numba'): numba is not installed.")
    if kernel is not None:
        # the constant tail starts at each job's first edge at/after its end
        tail = np.bincount(last, weights=nodes * curve.total_j, minlength=n_edges + 1)
        inner = np.zeros(n_edges, dtype=np.float64)
        lead_s = edges_s[0] + first * step - start_s
        kernel(inner, first.astype(np.int64), last.astype(np.int64), lead_s,
               np.asarray(nodes, dtype=np.float64), float(step), curve.energy_j,
               float(curve.knots_s[1]), float(curve.knots_s[-1]), float(curve.duration_s))
        return np.cumsum(tail[:n_edges]) + inner
    width = int(np.max(last - first, initial=0))
    # every job is evaluated at `width` edges from its first one; edges past its end return the
    # job's total energy (the curve holds it), and the constant tail starts right after them
    tail = np.zeros(n_edges + width + 1, dtype=np.float64)
    np.add.at(tail, first + width, nodes * curve.total_j)
    out += np.cumsum(tail[:n_edges])
    if width == 0:
        return out
    rows = max(1, POINTS_PER_CHUNK // width)
    offsets = np.arange(width)
    offsets_s = offsets * step
    inner = np.zeros(n_edges + width, dtype=np.float64)
    for j0 in range(0, len(first), rows):
        j1 = min(len(first), j0 + rows)
        f = first[j0:j1]
        lead_s = edges_s[0] + f * step - start_s[j0:j1]  # first interior edge − start
        energy = curve(lead_s[:, None] + offsets_s) * nodes[j0:j1, None]
        inner += np.bincount((f[:, None] + offsets).ravel(), weights=energy.ravel(),
                             minlength=n_edges + width)[: n_edges + width]
    return out + inner[:n_edges]
