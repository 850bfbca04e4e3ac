"""No simultaneous charge and discharge: the check after every solve, and its exact fix-up.

Charging c and discharging d = eta_c * eta_d * c in the same step leaves the state of charge
unchanged and burns (1 - eta_c * eta_d) * c: the battery as a dump load. The LP does not
forbid it (a binary per step would; STACK-NOTES: intractable for a year), so
:func:`microgrid.size` checks the dispatch after solving (``docs/formulation.md``, eq. 22-24):

1. Where min(c_t, d_t) > 0, both flows are lowered until one is 0, keeping the state of
   charge (:func:`untangle`); the energy that cycling burned is then taken up by curtailing
   more PV or by the user's dump load. Neither has a price, so the cost, the sizes and every
   other flow are unchanged: it is the same optimum.
2. What neither can take up was needed: the limits force more supply than the load takes
   (a ramp limit, a generator's minimum load, an outage). ``size`` then re-solves
   with a tie-break price on charge and discharge (eq. 23); cycling left after that is
   needed, and ``size`` raises unless the user allowed it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["overlap_kw", "untangle", "burned_kw"]


def overlap_kw(dispatch: pd.DataFrame) -> np.ndarray:
    """min(charge, discharge) per step [kW]: > 0 where both flow at once."""
    return np.minimum(dispatch["battery_charge_kw"].to_numpy(),
                      dispatch["battery_discharge_kw"].to_numpy())


def burned_kw(dispatch: pd.DataFrame, round_trip: float) -> np.ndarray:
    """Power burned by simultaneous charge and discharge per step [kW].

    ``(1 - eta) * delta`` with ``delta = min(c, d / eta)`` and ``eta = eta_c * eta_d``:
    what lowering both flows (keeping the state of charge) leaves over.
    """
    c = dispatch["battery_charge_kw"].to_numpy()
    d = dispatch["battery_discharge_kw"].to_numpy()
    delta = np.minimum(c, d / round_trip)
    return (1.0 - round_trip) * delta


def untangle(dispatch: pd.DataFrame, round_trip: float, dump_max_kw: float,
             tol_kw: float) -> tuple[pd.DataFrame, np.ndarray]:
    """Remove simultaneous charge and discharge where PV curtailment or the dump load can
    take up what it burned; return the new dispatch and the steps still cycling.

    Parameters
    ----------
    dispatch : pandas.DataFrame
        ``Sizing.dispatch`` columns [kW]; not modified.
    round_trip : float
        eta_c * eta_d [-].
    dump_max_kw : float
        The dump load's cap W̄ [kW] (0: none, inf: unlimited).
    tol_kw : float
        Overlaps up to this are solver noise and left alone [kW].

    Returns
    -------
    (pandas.DataFrame, numpy.ndarray of bool)
        The dispatch (charge, discharge, PV used and curtailed, dump load changed where
        fixed; every step still in balance, state of charge unchanged) and the steps where
        cycling is left because nothing else could take up the burned power.
    """
    out = dispatch.copy()
    c = out["battery_charge_kw"].to_numpy().copy()
    d = out["battery_discharge_kw"].to_numpy().copy()
    pv = out["pv_kw"].to_numpy().copy()
    curtailed = out["pv_curtailed_kw"].to_numpy().copy()
    dump = out["dump_load_kw"].to_numpy().copy()
    tangled = np.minimum(c, d) > tol_kw
    delta = np.where(tangled, np.minimum(c, d / round_trip), 0.0)
    excess = (1.0 - round_trip) * delta
    # PV first: a curtailed kW is free; then the dump load's headroom
    from_pv = np.minimum(excess, pv)
    rest = excess - from_pv
    from_dump = np.minimum(rest, np.maximum(dump_max_kw - dump, 0.0))
    left = rest - from_dump
    fixed = tangled & (left <= tol_kw)
    c[fixed] -= delta[fixed]
    d[fixed] -= round_trip * delta[fixed]
    pv[fixed] -= from_pv[fixed]
    curtailed[fixed] += from_pv[fixed]
    dump[fixed] += from_dump[fixed]
    out["battery_charge_kw"] = np.maximum(c, 0.0)
    out["battery_discharge_kw"] = np.maximum(d, 0.0)
    out["pv_kw"] = pv
    out["pv_curtailed_kw"] = curtailed
    out["dump_load_kw"] = dump
    return out, tangled & ~fixed
