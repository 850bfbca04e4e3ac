"""Studies built on :func:`~grid.dynamics.simulate.simulate`.

- :func:`loss_of_load_capacity`: the largest facility (or voltage-sensitive share of one) a
  case can lose at a bus without breaching a frequency limit — a loss-of-load hosting
  capacity, found by a bracketing search on simulated trips;
- :func:`which_faults_trip`: for each fault location, whether the facility's ride-through rule
  makes it leave the grid, and how much it loses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd

from grid.dynamics.cases import Case, load_case
from grid.dynamics.events import DEFAULT_CLEARING_CYCLES, BusFault, FacilityTrip
from grid.dynamics.load import DEFAULT_POWER_FACTOR
from grid.dynamics.ridethrough import RideThrough
from grid.dynamics.simulate import simulate

__all__ = ["loss_of_load_capacity", "LossOfLoadCapacity", "which_faults_trip"]


@dataclass(frozen=True)
class LossOfLoadCapacity:
    """Result of :func:`loss_of_load_capacity`.

    ``facility_mw``: the largest facility [MW] whose loss (of ``share`` of it) keeps the
    frequency within the limit, to within ``tolerance_mw``; ``lost_mw`` = share × that;
    ``binding``: what the first size above it breached; ``runs``: every simulated size with
    its zenith, nadir and whether it passed.
    """

    case: str
    bus: Any
    facility_mw: float
    lost_mw: float
    share: float
    f_max_hz: float | None
    f_min_hz: float | None
    binding: str
    tolerance_mw: float
    runs: pd.DataFrame


def _breach(r, f_max_hz, f_min_hz) -> str:
    if not r.completed:
        return f"unstable: {r.message}"
    if f_max_hz is not None and r.frequency_zenith_hz() > f_max_hz:
        return f"zenith {r.frequency_zenith_hz():.4f} Hz > {f_max_hz} Hz"
    if f_min_hz is not None and r.frequency_nadir_hz() < f_min_hz:
        return f"nadir {r.frequency_nadir_hz():.4f} Hz < {f_min_hz} Hz"
    return ""


def loss_of_load_capacity(case: str | Case, bus: Any, *, f_max_hz: float | None = 60.5,
                          f_min_hz: float | None = None, share: float = 1.0,
                          max_mw: float | None = None, tolerance_mw: float | None = None,
                          t_end_s: float = 10.0, dt_s: float = 1 / 30,
                          dispatch: str = "share") -> LossOfLoadCapacity:
    """The largest facility at ``bus`` whose trip keeps the frequency within the limits.

    A facility of size P [MW] runs at ``bus`` (its load spread over the generators, see
    ``dispatch``); at 1 s ``share`` of it trips. Losing load raises the frequency, so the
    limit that binds is normally ``f_max_hz`` (*assumption* 60.5 Hz, the upper edge of NERC
    PRC-024's no-time-limit band; ERCOT's ~2,600 MW figure is against its own limit);
    ``f_min_hz`` judges the nadir instead (used when ``f_max_hz=None``). The excursion grows
    with P, so a bracketing search (interpolation, with bisection as the fallback) between a
    passing and a breaching size finds the capacity.

    Parameters
    ----------
    max_mw
        Upper end of the search [MW]; default half the case's total generator rating.
    tolerance_mw
        Bisection stops when the bracket is narrower [MW]; default 1 % of ``max_mw``.
    t_end_s, dt_s
        Simulated time per trip and integration step [s] (the zenith comes within seconds).
    """
    c = load_case(case)
    if f_max_hz is None and f_min_hz is None:
        raise ValueError("give a frequency limit: f_max_hz= (zenith) and/or f_min_hz= (nadir)")
    if not 0 < share <= 1:
        raise ValueError(f"share={share} is not within (0, 1]")
    if max_mw is None:
        sn = sum(float(r.get("Sn", 100.0)) for m in ("PV", "Slack")
                 for r in c.records.get(m, ()) if r.get("u", 1) == 1)
        max_mw = 0.5 * sn
    tolerance_mw = tolerance_mw or 0.01 * max_mw
    rows = []

    limit = f_max_hz if f_max_hz is not None else f_min_hz
    sign = 1.0 if f_max_hz is not None else -1.0

    def run(p_mw: float) -> tuple[str, float]:
        """Simulate a trip of ``p_mw``; the breach (empty if none) and the margin used [Hz]."""
        try:
            r = simulate(c, facility_bus=bus, load_kw=p_mw * 1e3,
                         event=FacilityTrip(t_s=1.0, share=share), t_end_s=t_end_s,
                         dt_s=dt_s, dispatch=dispatch)
        except ValueError as exc:  # the power flow cannot carry the facility
            rows.append({"facility_mw": p_mw, "zenith_hz": math.nan, "nadir_hz": math.nan,
                         "passed": False, "breach": str(exc)})
            return f"no power flow: {exc}", math.inf
        why = _breach(r, f_max_hz, f_min_hz)
        rows.append({"facility_mw": p_mw, "zenith_hz": r.frequency_zenith_hz(),
                     "nadir_hz": r.frequency_nadir_hz(), "passed": not why, "breach": why})
        ext = r.frequency_zenith_hz() if f_max_hz is not None else r.frequency_nadir_hz()
        excursion = sign * (ext - c.freq_hz) if r.completed else math.inf
        return why, excursion

    # bracketing search: the excursion grows about linearly with the size lost, so the next
    # size is interpolated between the bracket's ends, then its neighbour one tolerance away is
    # tried to close the bracket; bisection when interpolation does not help
    margin = sign * (limit - c.freq_hz)
    lo, hi = 0.0, float(max_mw)
    e_lo = 0.0
    binding, e_hi = run(hi)
    if not binding:
        binding = f"none up to max_mw={max_mw:g} MW"
        lo = hi
    probe = None
    while hi - lo > tolerance_mw:
        width = hi - lo
        if probe is not None:
            g, probe = probe, None
        elif math.isfinite(e_hi) and e_hi > e_lo:
            g = lo + (margin - e_lo) / (e_hi - e_lo) * width
            g = min(max(g, lo + 0.02 * width), hi - 0.02 * width)
        else:
            g = 0.5 * (lo + hi)
        why, e = run(g)
        if why:
            hi, e_hi, binding = g, e, why
            nxt = g - 0.9 * tolerance_mw
        else:
            lo, e_lo = g, e
            nxt = g + 0.9 * tolerance_mw
        if lo < nxt < hi and hi - lo > tolerance_mw and (hi - lo) > 0.5 * width:
            probe = nxt
    runs = pd.DataFrame(rows).sort_values("facility_mw").reset_index(drop=True)
    return LossOfLoadCapacity(case=c.name, bus=bus, facility_mw=lo, lost_mw=lo * share,
                              share=share, f_max_hz=f_max_hz, f_min_hz=f_min_hz,
                              binding=binding, tolerance_mw=tolerance_mw, runs=runs)


def which_faults_trip(case: str | Case, facility_bus: Any, load_kw: float, *,
                      ride_through: RideThrough | None = None,
                      fault_buses: Sequence[Any] | None = None,
                      cycles: float = DEFAULT_CLEARING_CYCLES, x_pu: float = 1e-4,
                      t_end_s: float = 2.0, dt_s: float = 1 / 120,
                      power_factor: float = DEFAULT_POWER_FACTOR,
                      dispatch: str = "share") -> pd.DataFrame:
    """For each fault location, does the facility's rule make it leave the grid?

    A three-phase fault at each bus of ``fault_buses`` (default: every bus), from 0.5 s for
    ``cycles``. Returns one row per fault bus: the facility-bus voltage minimum [pu], whether
    the facility transferred, the MW lost, the frequency zenith [Hz], whether ANDES completed
    the run, the time it reached [s] and its message when it stopped early (a fault that loses
    synchronism stops it; so does a step ANDES cannot solve, e.g. clearing a bolted fault at a
    generator terminal). The rule and the figures cover the run up to where it stopped: a run
    that stopped early may not show a transfer that would have come. ``power_factor`` [-] and
    ``dispatch`` are those of :func:`~grid.dynamics.simulate.simulate`.
    """
    c = load_case(case)
    rule = ride_through or RideThrough()
    rows = []
    for b in (fault_buses if fault_buses is not None else c.buses):
        r = simulate(c, facility_bus=facility_bus, load_kw=load_kw, ride_through=rule,
                     event=BusFault(bus=b, t_s=0.5, cycles=cycles, x_pu=x_pu),
                     t_end_s=t_end_s, dt_s=dt_s, power_factor=power_factor,
                     dispatch=dispatch)
        rows.append({"fault_bus": b,
                     "voltage_min_pu": next(iter(r.voltage_dip_pu().values())),
                     "tripped": bool(r.tripped()), "mw_lost": r.mw_lost(),
                     "frequency_zenith_hz": r.frequency_zenith_hz(),
                     "completed": r.completed, "end_s": float(r.t_s[-1]),
                     "message": r.message})
    return pd.DataFrame(rows).set_index("fault_bus")
