"""Flexible interconnection: how much more load connects if it accepts curtailment.

A facility larger than the bus' firm hosting capacity can still connect when it agrees to
stay under the *headroom* of each hour: the largest facility power at which no limit breaks,
given that hour's background load. :func:`flexible_interconnection` computes the hourly
headroom once, then for each candidate size (the facility's shape scaled to that peak) the
curtailment ``max(0, load - headroom)``: hours, energy, share, events and what binds.

The headroom is found by bisection with the same engines as :func:`grid.timeseries`
(:func:`grid.powerflow.solve`), once per *distinct* background level: every step with the
same multiplier has the same headroom, so a constant background costs one bisection and a
background rounded to 0.01 a few dozen, all levels solved together in one engine call per
bisection step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import step_seconds
from grid import engines
from grid.attach import attach, check_bus, check_power_factor, facility_mw, is_number, q_mvar
from grid.bisection import bisect_many
from grid.collapse import NUMERICAL, NUMERICAL_FAILURE, Continuation, settle
from grid.hosting import base_violation_text, refuse_slack_bus
from grid.limits import Limits
from grid.powerflow import _background_scale, solve

if TYPE_CHECKING:
    from grid.flexible_queue import QueueFlexible

__all__ = ["FlexibleInterconnection", "flexible_interconnection", "headroom", "summarize"]

TABLE_COLUMNS = ("size_mw", "extra_mw", "energy_mwh_per_yr", "curtailed_h_per_yr",
                 "curtailed_mwh_per_yr", "curtailed_share_percent", "events_per_yr",
                 "mean_event_h", "longest_event_h", "binding_element")


@dataclass(frozen=True)
class FlexibleInterconnection:
    """Result of :func:`flexible_interconnection`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per candidate size: ``size_mw`` (the scaled facility's peak) [MW],
        ``extra_mw`` (above ``firm_mw``) [MW], ``energy_mwh_per_yr`` (uncurtailed)
        [MWh/yr], ``curtailed_h_per_yr`` [h/yr], ``curtailed_mwh_per_yr`` [MWh/yr],
        ``curtailed_share_percent`` (of the facility's energy) [%], ``events_per_yr``
        (runs of consecutive curtailed steps) [1/yr], ``mean_event_h`` and
        ``longest_event_h`` [h] (NaN without events), ``binding_element`` (the element that
        binds in most curtailed steps, e.g. ``"bus 15"``; ``""`` without curtailment).
        Per-year figures are totals over the series divided by its length in years
        (8,760 h).
    headroom_mw : pandas.Series
        Largest facility power at each step with no violation [MW] (within
        ``tolerance_mw`` below the true value), on the facility series' index.
    binding : pandas.Series
        The element that breaks its limit just above ``headroom_mw`` at each step
        (``"bus 15"``, ``"line 3"``, ``"trafo 0"``; ``"power flow"`` for voltage collapse,
        found as in :func:`grid.hosting_capacity`: a step that does not converge is walked
        up to by continuation first, :mod:`grid.collapse`).
    firm_mw : float
        Firm hosting capacity: the smallest headroom over the series [MW].
    load_mw : pandas.Series
        The facility series as given, in [MW].
    bus : int
    limits : Limits
    power_factor : float
        Lagging power factor of the facility [-].
    tolerance_mw : float
        Bisection tolerance of the headroom [MW].
    levels : int
        Number of distinct background levels solved.
    engine : str
        The power-flow engine used (as ``GridResult.engine``).
    background : pandas.Series or None
        The background multipliers [-] the study used, on the facility series' index (None:
        1 throughout).
    """

    table: pd.DataFrame
    headroom_mw: pd.Series
    binding: pd.Series
    firm_mw: float
    load_mw: pd.Series
    bus: int
    limits: Limits
    power_factor: float
    tolerance_mw: float
    levels: int
    engine: str
    background: pd.Series | None = None

    def __post_init__(self) -> None:
        if list(self.table.columns) != list(TABLE_COLUMNS):
            raise ValueError(f"table columns must be {TABLE_COLUMNS}, got "
                             f"{list(self.table.columns)}")
        if not self.headroom_mw.index.equals(self.load_mw.index):
            raise ValueError("headroom_mw and load_mw must share one index")

    def scaled_load_mw(self, size_mw: float) -> pd.Series:
        """The facility series scaled so that its peak is ``size_mw`` [MW]."""
        if not (is_number(size_mw) and math.isfinite(size_mw) and size_mw > 0):
            raise InputError(f"size_mw: expected a facility peak > 0 [MW], got {size_mw!r}.")
        return (self.load_mw / float(self.load_mw.max()) * float(size_mw)).rename("facility_mw")

    def curtailed_load_mw(self, size_mw: float) -> pd.Series:
        """``min(load, headroom)`` of the facility scaled to ``size_mw``: what may flow [MW]."""
        return np.minimum(self.scaled_load_mw(size_mw), self.headroom_mw).rename("facility_mw")

    def curtailed_share_percent(self, size_mw: float) -> float:
        """Share of the energy of the facility scaled to ``size_mw`` that is curtailed [%]."""
        load = self.scaled_load_mw(size_mw).to_numpy()
        return float(100.0 * np.maximum(load - self.headroom_mw.to_numpy(), 0.0).sum()
                     / load.sum())

    def size_at_share(self, share_percent: float, tolerance_mw: float = 0.01) -> float:
        """Largest facility peak [MW] whose curtailment stays within ``share_percent`` [%].

        The share grows with size (a larger copy of the same shape exceeds the same headroom
        by more), so a bisection on the size finds it; no power flow is run.
        """
        if not (is_number(share_percent) and 0 <= share_percent < 100):
            raise InputError(f"share_percent: expected a number in [0, 100) %, got "
                             f"{share_percent!r}.")
        # tolerance 0 (or NaN) would bisect forever
        if not (is_number(tolerance_mw) and math.isfinite(tolerance_mw) and tolerance_mw > 0):
            raise InputError(f"tolerance_mw: expected a finite number > 0 [MW] (the width of "
                             f"the final bracket, e.g. 0.01), got {tolerance_mw!r}.")
        lo, hi = self.firm_mw, 2.0 * self.firm_mw + 1.0
        while self.curtailed_share_percent(hi) <= share_percent:
            lo, hi = hi, 2.0 * hi
        while hi - lo > tolerance_mw:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.curtailed_share_percent(mid) <= share_percent else (lo, mid)
        return lo


def _step_worst(out: dict[str, np.ndarray], converged: np.ndarray, limits: Limits,
                columns: dict[str, pd.Index]) -> tuple[np.ndarray, np.ndarray]:
    """Per step: whether any limit breaks, and the element with the largest relative excess."""
    n = len(converged)
    best = np.full(n, -np.inf)
    label = np.full(n, "", dtype=object)
    checks = [
        ("bus", out["vm_pu"], limits.vm_min_pu, -1.0),
        ("bus", out["vm_pu"], limits.vm_max_pu, 1.0),
        ("line", out["line_loading_percent"], limits.loading_max_percent, 1.0),
        ("trafo", out["trafo_loading_percent"], limits.loading_max_percent, 1.0),
        ("trafo3w", out.get("trafo3w_loading_percent", np.zeros((n, 0))),
         limits.loading_max_percent, 1.0),
    ]
    for kind, values, limit, sign in checks:
        if values.size == 0:
            continue
        excess = np.nan_to_num(sign * (values - limit) / limit, nan=-np.inf)
        j = np.argmax(excess, axis=1)
        e = excess[np.arange(n), j]
        better = (e > 0) & (e > best)
        best[better] = e[better]
        names = np.array([f"{kind} {c}" for c in columns[kind]], dtype=object)
        label[better] = names[j[better]]
    label[~converged] = "power flow"
    return (~converged) | (best > 0), label


def headroom(
    net: pp.pandapowerNet,
    scale: np.ndarray,
    *,
    bus: int,
    limits: Limits,
    power_factor: float = 0.99,
    tolerance_mw: float = 0.01,
    p_start_mw: float = 1.0,
    p_max_mw: float = 10_000.0,
    enforce_q_lims: bool | None = None,
    times: pd.Index | None = None,
) -> tuple[np.ndarray, np.ndarray, int, str]:
    """Headroom [MW] and binding element at each background multiplier in ``scale``.

    Bisection per distinct multiplier (all levels in one engine call per step): the bracket
    starts at ``[0, p_start_mw]``, doubles until every level breaks a limit, then halves
    to ``tolerance_mw``; the lower end (no violation) is returned.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, int, str)
        Headroom per entry of ``scale`` [MW], binding element per entry, the number of
        distinct levels, the engine used.
    """
    scale = np.asarray(scale, dtype=np.float64)
    levels, inverse = np.unique(scale, return_inverse=True)
    work, load_index = attach(net, bus, power_factor=power_factor)
    model = engines.prepare(work, load_index, enforce_q_lims)
    engine = "runpp" if model.fast_reason else "auto"
    columns = {"bus": net.bus.index, "line": net.line.index, "trafo": net.trafo.index,
               "trafo3w": net.trafo3w.index}
    used = ""

    # a step that does not converge is walked up to by continuation before it counts as
    # voltage collapse (grid.collapse), as in grid.hosting_capacity
    cont = Continuation(model, power_factor, tolerance_mw)

    def violated(p: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nonlocal used
        out, conv, used, _ = solve(model, p, q_mvar(p, power_factor), levels[rows], engine)
        status = settle(cont, out, conv, p, levels[rows]) if not conv.all() else None
        broken, names = _step_worst(out, conv, limits, columns)
        if status is not None:
            names[status == NUMERICAL] = NUMERICAL_FAILURE
        return broken, names

    zero = np.zeros(len(levels))
    out0, conv0, used, _ = solve(model, zero, zero, levels, engine)
    bad, _ = _step_worst(out0, conv0, limits, columns)
    if bad.any():
        first = None if times is None else pd.Index(
            [times[int(np.flatnonzero(inverse == k)[0])] for k in range(len(levels))])
        raise InputError(base_violation_text(out0, conv0, limits, columns, first))
    lo, label = bisect_many(
        violated, np.full(len(levels), float(p_start_mw)), p_max_mw=p_max_mw,
        tolerance_mw=tolerance_mw,
        too_much=f"bus {bus} hosts more than p_max_mw={p_max_mw} MW without a violation at "
                 "some background level; raise p_max_mw.")
    return lo[inverse], label[inverse], len(levels), used


def _events(curtailed: np.ndarray) -> np.ndarray:
    """Lengths [steps] of the runs of consecutive True in ``curtailed``."""
    edges = np.diff(np.r_[0, curtailed.astype(np.int8), 0])
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


def summarize(load_mw: pd.Series, headroom_mw: np.ndarray, binding: np.ndarray,
              sizes_mw: np.ndarray | list[float], firm_mw: float) -> pd.DataFrame:
    """The size table of :class:`FlexibleInterconnection` from a headroom series.

    Parameters
    ----------
    load_mw : pandas.Series
        Facility shape on a fixed-step index [MW]; scaled so that its peak is each size.
    headroom_mw : numpy.ndarray
        Headroom per step [MW].
    binding : numpy.ndarray
        Binding element per step (str).
    sizes_mw : array-like
        Facility peaks [MW].
    firm_mw : float
        Firm hosting capacity [MW] (for ``extra_mw``).
    """
    # the checked step, not index.freq: a regular series without freq has freq None
    step_h = step_seconds(load_mw.index, "load_mw") / 3600.0
    years = len(load_mw) * step_h / 8760.0
    shape = load_mw.to_numpy(dtype=np.float64) / float(load_mw.max())
    rows = []
    for size in np.asarray(sizes_mw, dtype=np.float64):
        load = shape * size
        cut = np.maximum(load - headroom_mw, 0.0)
        on = cut > 0
        runs = _events(on) * step_h
        top = pd.Series(binding[on], dtype=object).value_counts()
        rows.append((size, size - firm_mw, load.sum() * step_h / years,
                     on.sum() * step_h / years, cut.sum() * step_h / years,
                     100.0 * cut.sum() / load.sum(), len(runs) / years,
                     runs.mean() if len(runs) else np.nan,
                     runs.max() if len(runs) else np.nan,
                     str(top.index[0]) if len(top) else ""))
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def flexible_interconnection(
    net: pp.pandapowerNet,
    load_kw: pd.Series | object,
    *,
    bus: int | None = None,
    limits: Limits | None = None,
    background: pd.Series | None = None,
    power_factor: float = 0.99,
    sizes_mw: np.ndarray | list[float] | None = None,
    tolerance_mw: float = 0.01,
    enforce_q_lims: bool | None = None,
) -> FlexibleInterconnection | QueueFlexible:
    """Curtailment a facility needs at each size above the firm hosting capacity.

    With a mapping bus -> facility series (an interconnection queue, in queue order)
    instead of one series and ``bus``: each step's headroom shared in queue order, each
    facility's curtailment series and energy (:class:`grid.flexible_queue.QueueFlexible`,
    :mod:`grid.flexible_queue`); ``sizes_mw`` is then not taken (scale the series).

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    load_kw : pandas.Series or FacilityLoad
        Interval-mean facility power on a tz-aware fixed-step index: [kW] when named
        ``*_kw`` (or a ``FacilityLoad``), [MW] when named ``*_mw``; any other name is
        refused (the unit sets :func:`implied_limit_kw`). The size table uses only its
        shape: it is scaled to each size (size = its peak).
        Or a mapping bus -> such a series: the queue (see above).
    bus : int
        Index of the connection bus in ``net.bus`` (one facility; omitted with a mapping).
    limits : Limits, optional
        Voltage band [pu] and loading limit [%]; default ``Limits()``.
    background : pandas.Series, optional
        Multipliers [-] of every existing load per step, on the facility series' index
        (as :func:`grid.timeseries`); default 1. Cost grows with its number of distinct
        values: round it (e.g. to 0.01) for long series.
    power_factor : float
        Lagging power factor of the facility [-], in (0, 1].
    sizes_mw : array-like, optional
        Facility peaks to study [MW], each > 0; default the firm capacity times 1.0, 1.05,
        ..., 2.0.
    tolerance_mw : float
        Bisection tolerance of the headroom [MW] (the headroom is at most this far below
        the true value).
    enforce_q_lims : bool, optional
        Generator Q limits, as in :func:`grid.timeseries`.

    Returns
    -------
    FlexibleInterconnection or QueueFlexible
        The size table, the headroom and binding element per step, the firm capacity; for
        a mapping, each step's allocation in queue order and each facility's curtailment.

    Raises
    ------
    aiload.errors.InputError
        Bad inputs, or a network that breaks ``limits`` with the facility at 0 MW at some
        background level (the elements are named, as in :func:`grid.hosting_capacity`).

    Examples
    --------
    >>> import pandas as pd, grid
    >>> idx = pd.date_range("2025-01-01", periods=4, freq="h", tz="UTC")
    >>> load = pd.Series([1.0, 2.0, 2.0, 1.0], idx, name="facility_mw")
    >>> res = grid.flexible_interconnection(grid.networks.load("cigre_mv"), load, bus=9,
    ...                                     limits=grid.Limits(vm_min_pu=0.9),
    ...                                     background=pd.Series(0.7, idx), sizes_mw=[2.0])
    >>> int(res.table.curtailed_h_per_yr.iloc[0] > 0)
    1
    """
    if isinstance(load_kw, pd.Series) and not str(load_kw.name or "").lower().endswith(
            ("_kw", "_mw")):
        # the table needs only the shape, so a unit error would pass unseen into
        # implied_limit_kw and curtailment_cost (a kW series read as MW: a 1000x limit)
        raise InputError(
            f"load_kw: a Series named {load_kw.name!r}; its unit decides the implied limit and "
            "the cost, so name it: '*_kw' for kW (e.g. series.rename('facility_kw')) or "
            "'*_mw' for MW, or pass the FacilityLoad itself."
        )
    if isinstance(load_kw, Mapping):
        if bus is not None:
            raise InputError(f"got both bus={bus!r} and a mapping of facilities; a queue names "
                             "each facility's bus as its key: omit bus=.")
        if sizes_mw is not None:
            raise InputError(f"sizes_mw={sizes_mw!r} is for one facility's size table; a "
                             "queue's facilities are studied at the sizes given: scale each "
                             "series in the mapping instead (e.g. {49: load_kw * 1.5}).")
    else:
        series = facility_mw(load_kw, "load_kw", net=net)
        bus = check_bus(net, bus)
    refuse_slack_bus(net, bus)
    pf = check_power_factor(power_factor)
    limits = limits if limits is not None else Limits()
    if not isinstance(limits, Limits):
        raise InputError(f"limits: expected a grid.Limits, got {type(limits).__name__}.")
    if not (is_number(tolerance_mw) and 0 < tolerance_mw < 1e3):
        raise InputError(f"tolerance_mw: expected a number in (0, 1000) MW, got "
                         f"{tolerance_mw!r}.")
    if isinstance(load_kw, Mapping):
        from grid.flexible_queue import queue_flexible

        return queue_flexible(net, load_kw, limits=limits, background=background,
                              power_factor=pf, tolerance_mw=float(tolerance_mw),
                              enforce_q_lims=enforce_q_lims,
                              rules=(_step_worst, base_violation_text, refuse_slack_bus))
    peak = float(series.max())
    if not peak > 0:
        raise InputError(f"load_kw: the series' peak is {peak} (nothing to scale); pass a "
                         "facility series with positive power.")
    scale = _background_scale(background, series.index)
    head, bind, n_levels, used = headroom(
        net, scale, bus=bus, limits=limits, power_factor=pf, tolerance_mw=tolerance_mw,
        p_start_mw=peak, enforce_q_lims=enforce_q_lims, times=series.index)
    firm = float(head.min())
    if sizes_mw is None:
        sizes = firm * np.linspace(1.0, 2.0, 21)
    else:
        try:
            sizes = np.asarray(sizes_mw, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InputError(f"sizes_mw: expected facility peaks [MW] as numbers, e.g. "
                             f"[20.0, 30.0], got {sizes_mw!r}.") from None
        if sizes.size == 0 or not np.all(np.isfinite(sizes)) or (sizes <= 0).any():
            raise InputError(f"sizes_mw: expected positive finite sizes [MW], got "
                             f"{sizes_mw!r}.")
    table = summarize(series, head, bind, sizes, firm)
    return FlexibleInterconnection(
        table=table,
        headroom_mw=pd.Series(head, index=series.index, name="headroom_mw"),
        binding=pd.Series(bind, index=series.index, name="binding", dtype=object),
        firm_mw=firm, load_mw=series, bus=bus, limits=limits, power_factor=pf,
        tolerance_mw=float(tolerance_mw), levels=n_levels, engine=used,
        background=None if background is None else pd.Series(
            scale, index=series.index, name="background"))
