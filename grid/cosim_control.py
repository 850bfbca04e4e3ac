"""What the controller of :func:`grid.cosimulate` sees, and the built-in controllers.

Every control period :func:`grid.cosimulate` solves the network with the facility at its
mean metered power of the previous period and the background of that period, and hands a
:class:`NetworkState` to the controller. The state can also solve *what if* power flows at
the same background with another facility power (:meth:`NetworkState.flows_at`), which
the built-in controllers use to find the largest facility power that keeps their quantity
within its limit (:meth:`NetworkState.headroom_mw`).

A controller is any callable ``(time, network_state, facility_state) -> kW``;
:class:`VoltageController` and :class:`LoadingController` are the built-in ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from aiload.errors import InputError

__all__ = ["NetworkState", "VoltageController", "LoadingController", "parse_branches"]

#: secant/bisection iterations of :meth:`NetworkState.headroom_mw`
HEADROOM_ITERATIONS = 12


@dataclass(frozen=True)
class NetworkState:
    """The network over the control period that just ended.

    Attributes
    ----------
    time : pandas.Timestamp
        Start of the control period about to begin (tz-aware).
    facility_mw : float
        Facility active power in the power flow: the previous period's mean metered power
        [MW] (lagging at the study's power factor).
    background : float
        Multiplier of every existing load over the previous period (its mean) [-].
    converged : bool
        Whether the power flow converged.
    bus : int
        The facility bus (index of ``net.bus``).
    vm_pu : numpy.ndarray
        Voltage magnitude per ``buses`` [pu] (NaN when not converged or out of service).
    line_loading_percent, trafo_loading_percent : numpy.ndarray
        Loading per ``lines`` / ``trafos`` [%] of the rated current.
    buses, lines, trafos : pandas.Index
        The network's element indices the arrays follow.
    trafo3w_loading_percent : numpy.ndarray
        Loading per ``trafo3ws`` [%]: the most loaded winding of each 3-winding
        transformer, against its own rating (``res_trafo3w.loading_percent``).
    trafo3ws : pandas.Index
        ``net.trafo3w`` index.
    """

    time: pd.Timestamp
    facility_mw: float
    background: float
    converged: bool
    bus: int
    vm_pu: np.ndarray
    line_loading_percent: np.ndarray
    trafo_loading_percent: np.ndarray
    buses: pd.Index
    lines: pd.Index
    trafos: pd.Index
    _solve: Callable[[float], dict | None] = field(repr=False, compare=False)
    trafo3w_loading_percent: np.ndarray = field(default_factory=lambda: np.zeros(0))
    trafo3ws: pd.Index = field(default_factory=lambda: pd.Index([], dtype=np.int64))

    @property
    def bus_vm_pu(self) -> float:
        """Voltage magnitude at the facility bus [pu]."""
        return float(self.vm_pu[self.buses.get_loc(self.bus)])

    def flows_at(self, p_mw: float) -> dict | None:
        """Power flow at this period's background with the facility at ``p_mw`` [MW].

        Returns ``{"vm_pu", "line_loading_percent", "trafo_loading_percent",
        "trafo3w_loading_percent"}`` arrays
        (as the attributes), or None when the power flow does not converge.
        """
        return self._solve(float(p_mw))

    def headroom_mw(self, margin: Callable[[dict], float], *, tolerance: float = 1e-4,
                    p_max_mw: float | None = None, memo: dict | None = None) -> float:
        """Largest facility power [MW] with ``margin(flows) >= 0`` at this background.

        ``margin`` maps a flows dict (see :meth:`flows_at`) to a number that falls as the
        facility grows (e.g. ``vm - v_min``). Found from the present operating point by
        secant steps, bisection once bracketed; a power flow that does not converge counts
        as a violation. Returns 0 when even 0 MW breaks it, ``p_max_mw`` (default 4 x the
        present power + 10 MW) when that does not. ``memo`` (a dict kept by the caller
        between periods, for one ``margin``) holds the last slope of ``margin`` against power,
        used for the first step, and the headroom found at each background multiplier: the
        network is otherwise fixed, so a background seen before costs no power flow.
        """
        levels = None if memo is None else memo.setdefault("levels", {})
        if levels is not None and p_max_mw is None and self.background in levels:
            return levels[self.background]
        found = self._search(margin, tolerance, p_max_mw, memo)
        if levels is not None and p_max_mw is None:
            levels[self.background] = found
        return found

    def _search(self, margin, tolerance: float, p_max_mw: float | None,
                memo: dict | None) -> float:
        p_max = 4.0 * max(self.facility_mw, 0.0) + 10.0 if p_max_mw is None else p_max_mw
        aim = 0.5 * tolerance  # aim inside the band [0, tolerance): the safe side

        def g(p: float) -> float:
            out = self.flows_at(p)
            value = -math.inf if out is None else float(margin(out))
            return -math.inf if math.isnan(value) else value

        p0 = min(max(self.facility_mw, 0.0), p_max)
        if self.converged and p0 == self.facility_mw:
            g0 = float(margin({"vm_pu": self.vm_pu,
                               "line_loading_percent": self.line_loading_percent,
                               "trafo_loading_percent": self.trafo_loading_percent,
                               "trafo3w_loading_percent": self.trafo3w_loading_percent}))
        else:
            g0 = g(p0)
        ok = (p0, g0) if g0 >= 0 else None  # highest power found within the limit
        bad = (p0, g0) if not g0 >= 0 else None  # lowest power found beyond it
        last = (p0, g0)
        p = p0 + max(0.05 * p0, 0.1) * (1.0 if ok else -1.0)
        slope = math.nan if memo is None else memo.get("slope", math.nan)
        if math.isfinite(g0) and slope < 0:
            p = p0 + (aim - g0) / slope
        for _ in range(HEADROOM_ITERATIONS):
            if ok is not None and ok[1] < tolerance:
                break
            if ok is not None and bad is not None and bad[0] - ok[0] < 1e-4:
                break
            p = min(max(p, 0.0), p_max)
            gp = g(p)
            if gp >= 0 and (ok is None or p > ok[0]):
                ok = (p, gp)
            elif gp < 0 and (bad is None or p < bad[0]):
                bad = (p, gp)
            if ok is None and p <= 0.0:
                return 0.0
            if bad is None and p >= p_max:
                return float(p_max)
            guess = math.nan
            if math.isfinite(gp) and math.isfinite(last[1]) and gp != last[1]:
                guess = p - (gp - aim) * (p - last[0]) / (gp - last[1])
                if memo is not None and p != last[0]:
                    memo["slope"] = (gp - last[1]) / (p - last[0])
            stride = 2.0 * abs(p - last[0]) + 1e-3
            if ok is not None and bad is not None:
                if not ok[0] < guess < bad[0]:
                    guess = 0.5 * (ok[0] + bad[0])
            elif ok is not None:
                if not guess > ok[0]:
                    guess = ok[0] + stride
            elif not guess < bad[0]:
                guess = bad[0] - stride
            if math.isfinite(gp):
                last = (p, gp)
            p = guess
        return 0.0 if ok is None else float(ok[0])


def parse_branches(branches, lines: pd.Index, trafos: pd.Index,
                   trafo3ws: pd.Index | None = None) -> tuple[np.ndarray, ...]:
    """Positions of the named branches in the line, trafo and trafo3w arrays.

    ``branches`` is a list of ``"line 3"`` / ``"trafo 0"`` / ``"trafo3w 0"`` names, or None
    for every line and 2- and 3-winding transformer.
    """
    trafo3ws = trafo3ws if trafo3ws is not None else pd.Index([], dtype=np.int64)
    if branches is None:
        return np.arange(len(lines)), np.arange(len(trafos)), np.arange(len(trafo3ws))
    if isinstance(branches, str) or not hasattr(branches, "__iter__"):
        raise InputError(f"branches: expected a list of names such as ['line 3', 'trafo 0'], "
                         f"got {branches!r}.")
    pos = {"line": [], "trafo": [], "trafo3w": []}
    for name in branches:
        kind, _, number = str(name).partition(" ")
        table = {"line": lines, "trafo": trafos, "trafo3w": trafo3ws}.get(kind)
        try:
            pos[kind].append(table.get_loc(int(number)))
        except (AttributeError, KeyError, ValueError, TypeError):
            raise InputError(
                f"branches: {name!r} is not a branch of this network; expected 'line N' "
                f"(N in net.line.index, {len(lines)} lines), 'trafo N' (N in "
                f"net.trafo.index, {len(trafos)} transformers) or 'trafo3w N' (N in "
                f"net.trafo3w.index, {len(trafo3ws)} 3-winding transformers).") from None
    if not pos["line"] and not pos["trafo"] and not pos["trafo3w"]:
        raise InputError("branches: expected at least one 'line N', 'trafo N' or 'trafo3w N', "
                         "got none.")
    return tuple(np.array(pos[k], dtype=int) for k in ("line", "trafo", "trafo3w"))


class _Hysteresis:
    """Engage when the headroom is within ``engage`` of the demand, release above ``release``."""

    def __init__(self, engage_fraction: float, release_fraction: float) -> None:
        if not (0.0 <= engage_fraction <= release_fraction < 1.0):
            raise InputError(
                f"expected 0 <= engage_fraction ({engage_fraction!r}) <= release_fraction "
                f"({release_fraction!r}) < 1.")
        self.engage, self.release = engage_fraction, release_fraction
        self.active = False

    def limit_kw(self, head_mw: float, demand_kw: float) -> float:
        head_kw = 1e3 * head_mw
        demand = demand_kw if math.isfinite(demand_kw) else 0.0
        if head_kw < demand * (1.0 + self.engage):
            self.active = True
        elif head_kw > demand * (1.0 + self.release):
            self.active = False
        return head_kw if self.active else math.inf


class VoltageController:
    """Hold the facility bus at or above ``vm_min_pu + margin_pu``.

    Each period: when the bus voltage of the previous period is within ``watch_pu`` of the
    target (or the controller is engaged), the headroom — the facility power at which the
    bus would sit exactly at the target at the previous period's background — is found by
    power flows on the network model (:meth:`NetworkState.headroom_mw`). The limit is that
    headroom while engaged; it engages when the headroom is below the facility's open-loop
    demand times ``1 + engage_fraction`` and releases (no limit) above ``1 +
    release_fraction`` (hysteresis).

    Parameters
    ----------
    vm_min_pu : float
        Voltage floor [pu].
    margin_pu : float
        Kept above the floor against the background's and the facility's change within a
        period [pu].
    watch_pu : float
        Above ``floor + margin + watch_pu`` (and not engaged) no power flow is added [pu].
    engage_fraction, release_fraction : float
        Hysteresis band [-] around the open-loop demand.
    """

    name = "voltage"

    def __init__(self, vm_min_pu: float, margin_pu: float = 0.002, watch_pu: float = 0.02,
                 engage_fraction: float = 0.5, release_fraction: float = 0.6) -> None:
        for label, value in (("margin_pu", margin_pu), ("watch_pu", watch_pu)):
            if not (isinstance(value, (int, float)) and 0 <= value < 0.2):
                raise InputError(f"{label}: expected a number in [0, 0.2) pu, got {value!r}.")
        self.target_pu = float(vm_min_pu) + float(margin_pu)
        self.watch_pu = float(watch_pu)
        self.band = _Hysteresis(engage_fraction, release_fraction)
        self.memo: dict = {}

    def __call__(self, time, network: NetworkState, facility) -> float:
        if not self.band.active and network.converged and \
                network.bus_vm_pu > self.target_pu + self.watch_pu:
            return math.inf
        k = network.buses.get_loc(network.bus)
        head = network.headroom_mw(lambda f: f["vm_pu"][k] - self.target_pu, tolerance=5e-5,
                                   memo=self.memo)
        return self.band.limit_kw(head, float(facility.demand_kw))


class LoadingController:
    """Hold the named branches below ``loading_max_percent - margin_percent``.

    As :class:`VoltageController`, with the margin of the most loaded watched branch
    instead of the bus voltage.

    Parameters
    ----------
    loading_max_percent : float
        Loading limit [%] of the rated current.
    line_pos, trafo_pos, trafo3w_pos : numpy.ndarray
        Positions of the watched lines, transformers and 3-winding transformers
        (:func:`parse_branches`; ``trafo3w_pos`` None: none watched).
    margin_percent, watch_percent : float
        Kept below the limit [%]; below ``limit - margin - watch`` no power flow is added.
    engage_fraction, release_fraction : float
        Hysteresis band [-].
    """

    name = "loading"

    def __init__(self, loading_max_percent: float, line_pos: np.ndarray, trafo_pos: np.ndarray,
                 margin_percent: float = 1.0, watch_percent: float = 10.0,
                 engage_fraction: float = 0.5, release_fraction: float = 0.6,
                 trafo3w_pos: np.ndarray | None = None) -> None:
        self.target = float(loading_max_percent) - float(margin_percent)
        self.trafo3w_pos = np.zeros(0, dtype=int) if trafo3w_pos is None else trafo3w_pos
        self.watch = float(watch_percent)
        self.line_pos, self.trafo_pos = line_pos, trafo_pos
        self.band = _Hysteresis(engage_fraction, release_fraction)
        self.memo: dict = {}

    def worst(self, flows: dict) -> float:
        """Highest loading among the watched branches [%]."""
        values = np.r_[flows["line_loading_percent"][self.line_pos],
                       flows["trafo_loading_percent"][self.trafo_pos]]
        if self.trafo3w_pos.size:
            values = np.r_[values, flows["trafo3w_loading_percent"][self.trafo3w_pos]]
        return float(np.nanmax(values)) if values.size and not np.isnan(values).all() else 0.0

    def __call__(self, time, network: NetworkState, facility) -> float:
        if not self.band.active and network.converged and self.worst({
                "line_loading_percent": network.line_loading_percent,
                "trafo_loading_percent": network.trafo_loading_percent,
                "trafo3w_loading_percent": network.trafo3w_loading_percent}) < \
                self.target - self.watch:
            return math.inf
        head = network.headroom_mw(lambda f: self.target - self.worst(f), tolerance=0.01,
                                   memo=self.memo)
        return self.band.limit_kw(head, float(facility.demand_kw))
