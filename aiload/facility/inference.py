"""Online inference services: demand, replicas that follow it, served requests and power.

Demand is a relative shape (:mod:`aiload.facility.demand`) scaled so its mean is
``utilization × nodes × capacity``. Replicas follow it through the SimPy autoscaler
(:func:`aiload.facility.engine.autoscale`). Per interval: served = min(demand, replicas ×
capacity) — the rest is counted as unserved, never dropped silently — and power is
``replicas·P(served/replicas) + (nodes − replicas)·P_idle`` with ``P`` the fitted per-node curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.facility.catalogue import InferenceCurve
from aiload.facility.demand import DemandShape
from aiload.facility.engine import autoscale
from aiload.facility.spec import InferenceSpec

__all__ = ["ServiceResult", "simulate_service", "step_means", "CHUNK_STEPS"]


#: fine steps evaluated at once when the decision means are formed (bounds memory)
CHUNK_STEPS = 1 << 20


@dataclass(frozen=True)
class ServiceResult:
    """One inference service on the fine grid, evaluated window by window.

    The replica change points are decided once for the whole run; demand, replicas, served
    rate and power of any slice of fine steps come from :meth:`window`, so a long
    high-resolution run that streams to Parquet never holds the whole series.

    Attributes
    ----------
    spec : InferenceSpec
    curve : InferenceCurve
        Per-node power against per-node request rate [W].
    idle_w : float
        Power of a node without a replica [W].
    demand : DemandShape
        Relative demand of any slice of fine steps [-].
    scale_per_s : float
        Demand at relative value 1: utilisation × nodes × capacity [requests/s].
    times_s, replicas_at : ndarray
        Replica change points [s from the start] and the count from each on [-].
    scaling : pandas.DataFrame
        The same change points: ``time`` (tz-aware) and ``replicas``.
    events : int
        SimPy events processed.
    capacity_per_s : float
        Per-node capacity used [requests/s].
    """

    spec: InferenceSpec
    curve: InferenceCurve
    idle_w: float
    demand: DemandShape
    scale_per_s: float
    times_s: np.ndarray
    replicas_at: np.ndarray
    scaling: pd.DataFrame
    events: int
    capacity_per_s: float

    def window(self, first: int, stop: int) -> dict[str, np.ndarray]:
        """Fine steps ``first .. stop - 1``: ``power_w`` [W], ``replicas`` [-] (time-weighted
        mean), ``requests_per_s`` and ``served_per_s`` [requests/s]."""
        step_s = self.demand.step_s
        demand = self.demand(first, stop) * self.scale_per_s
        replicas = step_means(self.times_s, self.replicas_at.astype(np.float64),
                              np.arange(first, stop + 1, dtype=np.float64) * step_s)
        served = np.minimum(demand, replicas * self.capacity_per_s)
        per_node = np.divide(served, replicas, out=np.zeros_like(served), where=replicas > 0)
        power = replicas * self.curve.power_w(per_node) + (self.spec.nodes - replicas) * self.idle_w
        return {"power_w": power, "replicas": replicas, "requests_per_s": demand,
                "served_per_s": served}


def step_means(times_s: np.ndarray, values: np.ndarray, edges_s: np.ndarray) -> np.ndarray:
    """Mean over each interval ``[e_k, e_k+1)`` of the step function that takes ``values[j]``
    from ``times_s[j]`` on (``times_s[0] <= e_0``, increasing) [unit of values].

    An interval without a change is exactly its value; one with changes adds
    ``(v_new − v_old)·(e_k+1 − t)/Δ_k`` per change at ``t``. No running integral, so the
    result of an interval does not depend on which edges were asked for with it.
    """
    lo, hi = edges_s[:-1], edges_s[1:]
    out = values[np.searchsorted(times_s, lo, side="right") - 1].astype(np.float64)
    inside = np.flatnonzero((times_s > edges_s[0]) & (times_s < edges_s[-1]))
    k = np.searchsorted(edges_s, times_s[inside], side="right") - 1
    # a change exactly at an interval's start is already its start value
    keep = times_s[inside] > lo[k]
    inside, k = inside[keep], k[keep]
    if len(inside):
        jump = values[inside] - values[inside - 1]
        share = (hi[k] - times_s[inside]) / (hi[k] - lo[k])
        out += np.bincount(k, weights=jump * share, minlength=len(lo))
    return out


def simulate_service(
    spec: InferenceSpec, curve: InferenceCurve, idle_w: float, start: pd.Timestamp,
    step_s: float, n_steps: int, rng: np.random.Generator,
) -> ServiceResult:
    """Decide the replicas of one service on a grid of ``n_steps`` intervals of ``step_s`` [s].

    ``decision_s`` is rounded to a whole number of steps (at least one). The autoscaler reads
    the mean demand of each decision interval, formed chunk by chunk.
    """
    capacity = spec.capacity_per_s or curve.capacity_per_s
    shape = DemandShape(spec.shape, start, step_s, n_steps, bursts=spec.bursts, rng=rng)
    scale = spec.utilization * spec.nodes * capacity
    horizon_s = n_steps * step_s
    per_decision = max(1, round(spec.decision_s / step_s))
    decision_s = per_decision * step_s
    blocks = n_steps // per_decision
    chunk = max(1, CHUNK_STEPS // per_decision)
    observed = np.concatenate([
        (shape(b0 * per_decision, min(blocks, b0 + chunk) * per_decision) * scale)
        .reshape(-1, per_decision).mean(axis=1)
        for b0 in range(0, blocks, chunk)
    ] or [np.zeros(0)])
    times, values, events = autoscale(
        observed, decision_s, capacity, nodes=spec.nodes, min_replicas=spec.min_replicas,
        target_load=spec.target_load, headroom=spec.headroom, reaction_s=spec.reaction_s,
        horizon_s=horizon_s,
    )
    scaling = pd.DataFrame({"time": start + pd.to_timedelta(times, unit="s"),
                            "replicas": values, "service": spec.model})
    return ServiceResult(spec, curve, float(idle_w), shape, float(scale), times, values, scaling,
                         events, float(capacity))
