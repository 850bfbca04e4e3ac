"""Fixtures of the grid tests: real measured facility power, scaled to a network."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandapower as pp
import pandas as pd
import pytest


def lumi_window(data_dir, n: int) -> pd.Series:
    """``n`` contiguous 10-min readings of LUMI's measured whole-system power [kW].

    Source: LLNL LAST power-provisioning dataset (CC BY 4.0), ``Lumi_power_10_min.csv``.
    Readings are floored to the 10-min grid; the first gap-free window is returned.
    """
    raw = pd.read_csv(data_dir / "llnl-last-power-provisioning" / "Lumi_power_10_min.csv")
    t = pd.to_datetime(raw.timestamp_secs, unit="s", utc=True).dt.floor("10min")
    steps = np.diff(t.astype("int64").to_numpy()) == 600 * 10**9
    run = np.convolve(steps, np.ones(n - 1, dtype=int), mode="valid")
    start = int(np.flatnonzero(run == n - 1)[0])
    idx = pd.DatetimeIndex(t.iloc[start:start + n], freq="10min")
    return pd.Series(raw.measured_kW.to_numpy()[start:start + n], index=idx, name="lumi_kw")


@pytest.fixture(scope="session")
def lumi_kw(data_dir) -> pd.Series:
    """Two days of LUMI's measured power at 10 min [kW] (288 steps)."""
    return lumi_window(data_dir, 288)


def scaled_mw(series_kw: pd.Series, peak_mw: float) -> pd.Series:
    """The measured shape scaled to a facility peak [MW]; named ``facility_mw``."""
    return (series_kw / series_kw.max() * peak_mw).rename("facility_mw")


def runpp_by_hand(net, bus: int, p_mw: float, q_mvar: float, scale: float = 1.0):
    """Independent reference: copy, scale loads, add the facility load, pandapower.runpp."""
    ref = copy.deepcopy(net)
    ref.load["p_mw"] *= scale
    ref.load["q_mvar"] *= scale
    pp.create_load(ref, bus, p_mw=p_mw, q_mvar=q_mvar)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # numba=False: same solution, without a multi-second JIT compile per test process
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8)
    return ref


def runpp_with_loads(net, loads_mw: dict[int, float], *, tan_phi: float, scale: float = 1.0,
                     out: tuple[str, int] | None = None, enforce_q_lims: bool = False):
    """Independent reference for several facilities: a copy with the network's loads scaled,
    element ``out`` (e.g. ``("line", 65)``) out of service, every facility a load at its bus
    (``q = p * tan_phi``), pandapower.runpp."""
    ref = copy.deepcopy(net)
    ref.load["p_mw"] *= scale
    ref.load["q_mvar"] *= scale
    if out is not None:
        ref[out[0]].at[out[1], "in_service"] = False
    for bus, p in loads_mw.items():
        pp.create_load(ref, bus, p_mw=p, q_mvar=p * tan_phi)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.runpp(ref, lightsim2grid=False, numba=False, tolerance_mva=1e-8,
                 enforce_q_lims=enforce_q_lims)
    return ref


@pytest.fixture(scope="session")
def scale_to():
    """The helper :func:`scaled_mw` as a fixture."""
    return scaled_mw


@pytest.fixture(scope="session")
def runpp_ref():
    """The helper :func:`runpp_by_hand` as a fixture."""
    return runpp_by_hand
