"""Flexible interconnection of a queue: each step's headroom shared in queue order.

``grid.flexible_interconnection(net, {bus: series, ...})`` lands here. At every step, each
facility in queue order gets the largest power that breaks no limit with those before it
drawing what they were allowed at that step and those after it not drawing yet (the rule of
the queue's hosting capacity, :mod:`grid.hosting_queue`, applied step by step): its
*headroom*. It may draw ``min(load, headroom)``; the rest is curtailed. With every facility
at its allowed power the step breaks no limit (the last facility's search had them all
connected).

The headroom is found by the flexible interconnection's bisection (the bracket starts at the
facility's peak, doubles until every step breaks a limit, then halves to ``tolerance_mw``),
every step at once in one engine call per bisection step, and steps with the same background
and the same power of those before are solved once. A step that does not converge is walked
up to by continuation first (:mod:`grid.collapse`), along that facility with those before it
held, before it counts as voltage collapse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import step_seconds
from grid import engines
from grid.attach import attach_all, q_mvar
from grid.bisection import bisect_many
from grid.collapse import NUMERICAL, NUMERICAL_FAILURE, Continuation, settle
from grid.limits import Limits
from grid.powerflow import _background_scale, solve

__all__ = ["QueueFlexible", "queue_flexible"]

TABLE_COLUMNS = ("requested_mw", "firm_mw", "energy_mwh", "curtailed_mwh",
                 "curtailed_share_percent", "curtailed_h", "events", "longest_event_h",
                 "binding_element")


@dataclass(frozen=True)
class QueueFlexible:
    """Result of ``grid.flexible_interconnection(net, {bus: series, ...})``.

    Attributes
    ----------
    allocation : pandas.DataFrame
        One row per step and facility, index (``time``, ``bus``) in queue order within a
        step, with :class:`grid.hosting_queue.QueueCapacity`'s columns: ``requested_mw``
        (the facility's power at the step) [MW], ``hosting_mw`` (its headroom: the largest
        power with those before it at their allocations and those after it off, within
        ``tolerance_mw`` below) [MW], ``allocated_mw`` (``min(requested, hosting)``) [MW],
        ``granted`` (nothing curtailed), ``element`` (what breaks just above ``hosting_mw``:
        ``"bus 5"``, ``"line 3"``, ``"power flow"`` for voltage collapse, ``"power flow
        (numerical failure)"``), and ``curtailed_mw`` (``requested - allocated``) [MW].
    table : pandas.DataFrame
        One row per facility (index ``bus``, queue order): ``requested_mw`` (its peak)
        [MW], ``firm_mw`` (its smallest headroom) [MW], ``energy_mwh`` (uncurtailed, over
        the series) [MWh], ``curtailed_mwh`` [MWh], ``curtailed_share_percent`` [%],
        ``curtailed_h`` [h], ``events`` (runs of consecutive curtailed steps),
        ``longest_event_h`` [h] (NaN without events), ``binding_element`` (what binds in
        most of its curtailed steps; ``""`` without curtailment).
    load_mw : pandas.DataFrame
        The facilities' power as given [MW], time x bus.
    limits : Limits
    power_factor : float
        Lagging power factor of every facility [-].
    tolerance_mw : float
        Bisection tolerance of each headroom [MW].
    engine : str
        The power-flow engine used.
    background : pandas.Series or None
        The background multipliers [-] used (None: 1 throughout).
    """

    allocation: pd.DataFrame
    table: pd.DataFrame
    load_mw: pd.DataFrame
    limits: Limits
    power_factor: float
    tolerance_mw: float
    engine: str
    background: pd.Series | None = None

    def _wide(self, column: str) -> pd.DataFrame:
        wide = self.allocation[column].unstack("bus")
        return wide[list(self.load_mw.columns)].rename_axis(columns="bus")

    @property
    def headroom_mw(self) -> pd.DataFrame:
        """Each facility's headroom per step [MW], time x bus."""
        return self._wide("hosting_mw")

    @property
    def allocated_mw(self) -> pd.DataFrame:
        """What each facility may draw per step, ``min(load, headroom)`` [MW], time x bus."""
        return self._wide("allocated_mw")

    @property
    def curtailed_mw(self) -> pd.DataFrame:
        """Each facility's curtailment per step [MW], time x bus."""
        return self._wide("curtailed_mw")


def _events(on: np.ndarray) -> np.ndarray:
    """Lengths [steps] of the runs of consecutive True in ``on``."""
    edges = np.diff(np.r_[0, on.astype(np.int8), 0])
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


def queue_flexible(net, queue: Mapping, *, limits: Limits, background: pd.Series | None,
                   power_factor: float, tolerance_mw: float, enforce_q_lims: bool | None,
                   p_max_mw: float = 10_000.0, rules) -> QueueFlexible:
    """The shared headroom (arguments checked by :func:`grid.flexible_interconnection`,
    except the queue itself). ``rules``: :mod:`grid.flexible`'s ``(step_worst,
    base_violation_text, refuse_slack_bus)``."""
    from grid.queue import facilities

    step_worst, base_violation_text, refuse_slack_bus = rules
    if not isinstance(queue, Mapping) or len(queue) == 0:
        raise InputError(f"load_kw: expected a facility series or a non-empty mapping bus -> "
                         f"facility series, got {queue!r}.")
    fac = facilities(queue, None, net=net)
    buses = fac.buses
    for b in buses:
        refuse_slack_bus(net, b)
    load = fac.p_mw.to_numpy(dtype=np.float64)  # steps x facilities
    peaks = load.max(axis=0)
    for b, peak in zip(buses, peaks):
        if not peak > 0:
            raise InputError(f"load_kw[{b}]: the facility series' peak is {peak} MW; a "
                             "flexible interconnection needs a positive peak.")
    index = fac.p_mw.index
    scale = _background_scale(background, index)
    work, load_index = attach_all(net, buses, power_factor=power_factor)
    model = engines.prepare(work, load_index, enforce_q_lims)
    engine = "runpp" if model.fast_reason else "auto"
    columns = {"bus": net.bus.index, "line": net.line.index, "trafo": net.trafo.index,
               "trafo3w": net.trafo3w.index}
    n, m = load.shape
    cont = Continuation(model, power_factor, tolerance_mw)
    used = ""

    zero = np.zeros((n, m))
    out0, conv0, used, _ = solve(model, zero, zero, scale, engine)
    bad, _ = step_worst(out0, conv0, limits, columns)
    if bad.any():
        raise InputError(base_violation_text(out0, conv0, limits, columns, index))

    allocated = np.zeros((n, m))
    head = np.zeros((n, m))
    label = np.full((n, m), "", dtype=object)
    for j, b in enumerate(buses):
        held = allocated.copy()  # those before j at their allocations, j and after off
        # steps with the same background and the same power of those before: one search
        key = np.column_stack([scale, held[:, :j]])
        rows_of, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)[1:]
        inverse = np.asarray(inverse).ravel()
        u_scale, u_held = scale[rows_of], held[rows_of]
        grow = np.zeros((len(rows_of), m))
        grow[:, j] = 1.0

        def violated(x: np.ndarray, rows: np.ndarray, j=j, u_scale=u_scale, u_held=u_held,
                     grow=grow) -> tuple[np.ndarray, np.ndarray]:
            nonlocal used
            p = u_held[rows].copy()
            p[:, j] = x
            out, conv, used, _ = solve(model, p, q_mvar(p, power_factor), u_scale[rows],
                                       engine)
            status = None
            if not conv.all():
                status = settle(cont, out, conv, x, u_scale[rows], direction=grow[rows],
                                offset=u_held[rows])
            broken, names = step_worst(out, conv, limits, columns)
            if status is not None:
                names[status == NUMERICAL] = NUMERICAL_FAILURE
            return broken, names

        k = len(rows_of)
        lo, found = bisect_many(
            violated, np.full(k, float(peaks[j])), p_max_mw=p_max_mw,
            tolerance_mw=tolerance_mw,
            too_much=f"bus {b} takes more than p_max_mw={p_max_mw} MW without a violation at "
                     "some step (with those before it in the queue); raise p_max_mw.")
        head[:, j] = lo[inverse]
        label[:, j] = found[inverse]
        allocated[:, j] = np.minimum(load[:, j], head[:, j])

    curtailed = load - allocated
    allocation = pd.DataFrame({
        "requested_mw": load.ravel(), "hosting_mw": head.ravel(),
        "allocated_mw": allocated.ravel(), "granted": (curtailed <= 0).ravel(),
        "element": label.ravel(), "curtailed_mw": curtailed.ravel(),
    }, index=pd.MultiIndex.from_product([index, list(buses)], names=["time", "bus"]))
    step_h = step_seconds(index, "load_kw") / 3600.0
    rows = []
    for j, b in enumerate(buses):
        on = curtailed[:, j] > 0
        runs = _events(on) * step_h
        top = pd.Series(label[on, j], dtype=object).value_counts()
        rows.append({"bus": b, "requested_mw": float(peaks[j]), "firm_mw": float(head[:, j].min()),
                     "energy_mwh": float(load[:, j].sum() * step_h),
                     "curtailed_mwh": float(curtailed[:, j].sum() * step_h),
                     "curtailed_share_percent": float(100.0 * curtailed[:, j].sum()
                                                      / load[:, j].sum()),
                     "curtailed_h": float(on.sum() * step_h), "events": len(runs),
                     "longest_event_h": float(runs.max()) if len(runs) else np.nan,
                     "binding_element": str(top.index[0]) if len(top) else ""})
    table = pd.DataFrame(rows).set_index("bus")[list(TABLE_COLUMNS)]
    return QueueFlexible(
        allocation=allocation, table=table, load_mw=fac.p_mw, limits=limits,
        power_factor=power_factor, tolerance_mw=float(tolerance_mw), engine=used,
        background=None if background is None else pd.Series(scale, index=index,
                                                             name="background"))
