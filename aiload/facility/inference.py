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
from aiload.facility.demand import demand_shape
from aiload.facility.engine import autoscale
from aiload.facility.spec import InferenceSpec
from aiload.facility.summation import ramp_at_edges

__all__ = ["ServiceResult", "simulate_service"]


@dataclass(frozen=True)
class ServiceResult:
    """One inference service on the fine grid (interval means).

    Attributes
    ----------
    power_w : ndarray
        Pool power [W].
    replicas : ndarray
        Mean active replicas [-].
    requests_per_s, served_per_s : ndarray
        Demand and served rate [requests/s].
    scaling : pandas.DataFrame
        Replica change points: ``time`` (tz-aware) and ``replicas``.
    events : int
        SimPy events processed.
    capacity_per_s : float
        Per-node capacity used [requests/s].
    """

    power_w: np.ndarray
    replicas: np.ndarray
    requests_per_s: np.ndarray
    served_per_s: np.ndarray
    scaling: pd.DataFrame
    events: int
    capacity_per_s: float


def simulate_service(
    spec: InferenceSpec, curve: InferenceCurve, idle_w: float, start: pd.Timestamp,
    step_s: float, n_steps: int, rng: np.random.Generator,
) -> ServiceResult:
    """Simulate one service on a grid of ``n_steps`` intervals of ``step_s`` [s].

    ``decision_s`` is rounded to a whole number of steps (at least one).
    """
    capacity = spec.capacity_per_s or curve.capacity_per_s
    rel = demand_shape(spec.shape, start, step_s, n_steps, bursts=spec.bursts, rng=rng)
    demand = rel * (spec.utilization * spec.nodes * capacity)
    horizon_s = n_steps * step_s
    decision_s = max(1, round(spec.decision_s / step_s)) * step_s
    times, values, events = autoscale(
        demand, step_s, capacity, nodes=spec.nodes, min_replicas=spec.min_replicas,
        target_load=spec.target_load, headroom=spec.headroom, decision_s=decision_s,
        reaction_s=spec.reaction_s, horizon_s=horizon_s,
    )
    # replicas as a step function: exact time-weighted mean per interval
    ends = np.append(times[1:], np.inf)
    edges = np.arange(n_steps + 1, dtype=np.float64) * step_s
    replicas = np.diff(ramp_at_edges(edges, times, np.minimum(ends, horizon_s), values.astype(float))) / step_s
    served = np.minimum(demand, replicas * capacity)
    per_node = np.divide(served, replicas, out=np.zeros_like(served), where=replicas > 0)
    power = replicas * curve.power_w(per_node) + (spec.nodes - replicas) * idle_w
    scaling = pd.DataFrame(
        {"time": start + pd.to_timedelta(times, unit="s"), "replicas": values, "service": spec.model}
    )
    return ServiceResult(power, replicas, demand, served, scaling, events, float(capacity))
