"""Online inference services: demand, the nodes that serve it, served requests and power.

Demand is a relative shape (:mod:`aiload.facility.demand`) times a scale. Two ways to size the
serving nodes (``InferenceSpec.sizing``):

- ``"latency"`` (default, as the NLR study sizes it): in each decision interval the pool runs
  ``ceil(R / c)`` nodes for the ``R`` requests/s it has to serve, ``c`` being a node's capacity
  at the latency target (:func:`aiload.facility.catalogue.capacity_at_latency`). Requests beyond
  the pool's capacity wait, first come first served, and a request that would wait longer than
  ``timeout_s`` gives up: it is counted unserved (:func:`latency_sizing`). The scale is solved
  so that the mean share of busy nodes is ``utilization`` (:func:`solve_demand_scale`).
- ``"autoscaler"`` (the former model): replicas follow demand through the SimPy autoscaler
  (:func:`aiload.facility.engine.autoscale`) with a target load, headroom and a reaction
  delay; ``utilization`` is mean demand / capacity; served = min(demand, replicas × capacity).

Power: ``busy·P(served/busy) + (nodes − busy)·P_idle`` with ``P`` the measured per-node curve
and ``P_idle`` the fleet's idle power.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError

from aiload.facility.catalogue import InferenceCurve
from aiload.facility.demand import DemandShape, shape_period_s
from aiload.facility.engine import autoscale
from aiload.facility.spec import InferenceSpec

__all__ = ["ServiceResult", "simulate_service", "step_means", "latency_sizing",
           "solve_demand_scale", "CHUNK_STEPS"]


#: fine steps evaluated at once when the decision means are formed (bounds memory)
CHUNK_STEPS = 1 << 20
#: the ServeGen shape's period: the demand scale is solved over a bundled shape's period [s]
SHAPE_PERIOD_S = 14 * 86400.0


@dataclass(frozen=True)
class ServiceResult:
    """One inference service on the fine grid, evaluated window by window.

    The nodes of each decision interval (latency sizing) or the replica change points
    (autoscaler) are decided once for the whole run; demand, busy nodes, served rate and
    power of any slice of fine steps come from :meth:`window`, so a long high-resolution run
    that streams to Parquet never holds the whole series.

    Attributes
    ----------
    spec : InferenceSpec
    curve : InferenceCurve
        Per-node power against per-node request rate [W].
    idle_w : float
        Power of a node that serves nothing [W].
    demand : DemandShape
        Relative demand of any slice of fine steps [-].
    scale_per_s : float
        Demand at relative value 1 [requests/s].
    times_s, replicas_at : ndarray
        Change points of the busy nodes [s from the start] and the count from each on [-].
    scaling : pandas.DataFrame
        The same change points: ``time`` (tz-aware), ``replicas`` and ``service``.
    events : int
        SimPy events processed (0 for latency sizing, which needs no clock).
    capacity_per_s : float
        Per-node capacity used [requests/s].
    blocks : dict of ndarray or None
        Latency sizing: per decision interval ``nodes`` [-], ``served_per_s``,
        ``unserved_per_s`` [requests/s], ``queued`` [requests] and ``power_w`` [W].
    per_block : int
        Fine steps per decision interval [-].
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
    blocks: dict | None = None
    per_block: int = 1

    def window(self, first: int, stop: int) -> dict[str, np.ndarray]:
        """Fine steps ``first .. stop - 1``: ``power_w`` [W], ``replicas`` (busy nodes,
        time-weighted mean) [-], ``requests_per_s``, ``served_per_s`` and ``unserved_per_s``
        [requests/s], ``queued_requests`` [requests]."""
        demand = self.demand(first, stop) * self.scale_per_s
        if self.blocks is not None:
            # the decision interval's values hold for each of its fine steps
            k = np.arange(first, stop) // self.per_block
            out = {key: self.blocks[key][k] for key in ("power_w", "served_per_s",
                                                        "unserved_per_s", "queued")}
            return {"power_w": out["power_w"], "replicas": self.blocks["nodes"][k],
                    "requests_per_s": demand, "served_per_s": out["served_per_s"],
                    "unserved_per_s": out["unserved_per_s"], "queued_requests": out["queued"]}
        step_s = self.demand.step_s
        replicas = step_means(self.times_s, self.replicas_at.astype(np.float64),
                              np.arange(first, stop + 1, dtype=np.float64) * step_s)
        served = np.minimum(demand, replicas * self.capacity_per_s)
        per_node = np.divide(served, replicas, out=np.zeros_like(served), where=replicas > 0)
        power = replicas * self.curve.power_w(per_node) + (self.spec.nodes - replicas) * self.idle_w
        return {"power_w": power, "replicas": replicas, "requests_per_s": demand,
                "served_per_s": served, "unserved_per_s": demand - served,
                "queued_requests": np.zeros_like(demand)}


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


def latency_sizing(demand_per_s: np.ndarray, block_s: float, capacity_per_s: float, nodes: int,
                   *, timeout_s: float, min_nodes: int = 0) -> dict[str, np.ndarray]:
    """Busy nodes, served, unserved and queued requests of a pool sized by a latency target.

    Each interval of ``block_s`` runs ``n = ceil(S / (c·Δ))`` nodes (``min_nodes..nodes``) for
    the ``S`` requests it serves. Requests beyond the pool's capacity ``C = nodes·c·Δ`` wait
    first come first served; while they wait the pool runs at ``C``, so a request that finds
    ``q`` requests ahead waits ``q / (nodes·c)`` and gives up when that exceeds ``timeout_s``:
    the queue holds at most ``B = nodes·c·timeout_s``. Per interval, with ``q`` the queue
    at its start and ``A`` its arrivals: ``S = min(q + A, C)``, ``q' = min(q + A − S, B)``,
    unserved ``q + A − S − q'`` (dated at arrival). Arrivals = served + unserved + the change
    of the queue, exactly.

    Parameters
    ----------
    demand_per_s : ndarray
        Mean incoming rate of each interval [requests/s].
    block_s : float
        Interval length [s].
    capacity_per_s : float
        Requests/s one node serves at the latency target [requests/s].
    nodes : int
        Nodes of the pool [-].
    timeout_s : float
        Longest wait before a request gives up [s].
    min_nodes : int
        Nodes kept serving even without demand [-].

    Returns
    -------
    dict
        ``nodes`` [-], ``served_per_s``, ``unserved_per_s`` [requests/s], ``queued`` (mean of
        the interval's start and end queue) [requests] and ``queue_end`` [requests].
    """
    arrivals = np.asarray(demand_per_s, dtype=np.float64) * block_s
    full = nodes * capacity_per_s * block_s
    limit = nodes * capacity_per_s * timeout_s
    served = np.minimum(arrivals, full)
    dropped = np.zeros_like(arrivals)
    queue_end = np.zeros_like(arrivals)
    over = np.flatnonzero(arrivals > full)
    if len(over):
        # the queue is only ever non-empty from an interval beyond capacity until it drains:
        # walk those stretches (on Python floats: ~10x faster than numpy scalars), everything
        # else is served as it comes
        values = arrivals.tolist()
        n, done = len(values), 0
        rows, out_s, out_d, out_q = [], [], [], []
        for k in over.tolist():
            if k < done:
                continue
            q = 0.0
            while k < n:
                avail = q + values[k]
                s = avail if avail < full else full
                rest = avail - s
                q_new = rest if rest < limit else limit
                rows.append(k)
                out_s.append(s)
                out_d.append(rest - q_new)
                out_q.append(q_new)
                q, k = q_new, k + 1
                if q == 0.0:
                    break
            done = k
        served[rows], dropped[rows], queue_end[rows] = out_s, out_d, out_q
    busy = np.ceil(served / (capacity_per_s * block_s) * (1.0 - 1e-12))
    busy = np.clip(busy, min_nodes, nodes)
    queue_start = np.concatenate(([0.0], queue_end[:-1]))
    return {"nodes": busy, "served_per_s": served / block_s, "unserved_per_s": dropped / block_s,
            "queued": 0.5 * (queue_start + queue_end), "queue_end": queue_end}


def solve_demand_scale(relative: np.ndarray, utilization: float, block_s: float,
                       capacity_per_s: float, nodes: int, *, timeout_s: float,
                       min_nodes: int = 0, warm_up: int = 0) -> float:
    """Demand at relative value 1 whose latency sizing keeps ``utilization`` of the nodes busy
    on average over ``relative[warm_up:]`` (one value per interval of ``block_s``; the first
    ``warm_up`` intervals only fill the queue) [requests/s].

    The mean share of busy nodes rises monotonically with the scale; it is solved with
    Brent's method to a relative tolerance of 1e-9.
    """
    from scipy import optimize  # noqa: PLC0415 - only latency-sized services need it

    relative = np.asarray(relative, dtype=np.float64)

    def busy_share(scale: float) -> float:
        got = latency_sizing(relative * scale, block_s, capacity_per_s, nodes,
                             timeout_s=timeout_s, min_nodes=min_nodes)
        return float(got["nodes"][warm_up:].mean()) / nodes

    lo = 0.0
    floor = busy_share(lo)
    positive = relative[relative > 0]
    if floor >= utilization or not len(positive):
        raise InputError(
            f"InferenceSpec.utilization={utilization!r}: the pool keeps {floor:.4f} of its nodes "
            f"busy with no demand (min_replicas) and the demand shape has "
            f"{len(positive)} intervals with requests; give a utilisation above {floor:.4f}."
        )
    # every interval at capacity: all nodes busy
    hi = nodes * capacity_per_s / positive.min()
    if busy_share(hi) < utilization:
        raise InputError(
            f"InferenceSpec.utilization={utilization!r} cannot be reached: the demand shape has "
            "intervals without requests, so the pool is never busy all the time; give less."
        )
    scale = float(optimize.brentq(lambda s: busy_share(s) - utilization, lo, hi,
                                  xtol=1e-12, rtol=1e-9))
    # the share is a step function of the scale (whole nodes): take the side of the step
    # nearer the asked share
    above = scale * (1.0 + 4e-9)
    if abs(busy_share(above) - utilization) < abs(busy_share(scale) - utilization):
        return above
    return scale


def _block_means(shape: DemandShape, per_block: int, n_steps: int) -> np.ndarray:
    """Mean relative demand of each decision interval (the last may be partial) [-]."""
    blocks = -(-n_steps // per_block)
    chunk = max(1, CHUNK_STEPS // per_block)
    parts = []
    for b0 in range(0, blocks, chunk):
        b1 = min(blocks, b0 + chunk)
        values = shape(b0 * per_block, min(n_steps, b1 * per_block))
        pad = (b1 - b0) * per_block - len(values)
        counts = np.full(b1 - b0, float(per_block))
        if pad:
            counts[-1] -= pad
            values = np.append(values, np.zeros(pad))
        parts.append(values.reshape(-1, per_block).sum(axis=1) / counts)
    return np.concatenate(parts) if parts else np.zeros(0)


def _latency_service(spec, curve, idle_w, start, step_s, n_steps, shape, capacity, per_block
                     ) -> tuple[float, dict, np.ndarray, np.ndarray]:
    block_s = per_block * step_s
    observed = _block_means(shape, per_block, n_steps)
    if isinstance(spec.shape, str):
        # a bundled shape repeats (14 days, a week): solve over one period, after a period of
        # warm-up that fills the queue as it would be at the period's start
        local = start.tz_convert(start.tz).normalize()
        steps = int(round(shape_period_s(spec.shape) / step_s))
        ref_shape = DemandShape(spec.shape, local, step_s, 2 * steps, bursts=False, rng=None)
        ref = _block_means(ref_shape, per_block, 2 * steps)
        periods = steps // per_block
    else:
        ref, periods = observed, 0
    kw = dict(timeout_s=spec.timeout_s, min_nodes=spec.min_replicas)
    scale = solve_demand_scale(ref, spec.utilization, block_s, capacity, spec.nodes,
                               warm_up=periods, **kw)
    blocks = latency_sizing(observed * scale, block_s, capacity, spec.nodes, **kw)
    busy = blocks["nodes"]
    rate = np.divide(blocks["served_per_s"], busy, out=np.zeros_like(busy), where=busy > 0)
    blocks["power_w"] = busy * curve.power_w(rate) + (spec.nodes - busy) * idle_w
    change = np.flatnonzero(np.diff(busy, prepend=np.nan) != 0)
    return scale, blocks, change * block_s, busy[change].astype(np.int64)


def simulate_service(
    spec: InferenceSpec, curve: InferenceCurve, idle_w: float, start: pd.Timestamp,
    step_s: float, n_steps: int, rng: np.random.Generator,
) -> ServiceResult:
    """Decide the busy nodes of one service on a grid of ``n_steps`` intervals of ``step_s``
    [s].

    ``decision_s`` is rounded to a whole number of steps (at least one). Both sizings read
    the mean demand of each decision interval, formed chunk by chunk.
    """
    capacity = spec.capacity_per_s or curve.capacity_per_s
    shape = DemandShape(spec.shape, start, step_s, n_steps, bursts=spec.bursts, rng=rng)
    per_decision = max(1, round(spec.decision_s / step_s))
    if spec.sizing == "latency":
        scale, blocks, times, values = _latency_service(
            spec, curve, idle_w, start, step_s, n_steps, shape, capacity, per_decision)
        scaling = pd.DataFrame({"time": start + pd.to_timedelta(times, unit="s"),
                                "replicas": values, "service": spec.model})
        return ServiceResult(spec, curve, float(idle_w), shape, float(scale), times, values,
                             scaling, 0, float(capacity), blocks, per_decision)
    scale = spec.utilization * spec.nodes * capacity
    horizon_s = n_steps * step_s
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
