"""Fixtures of the microgrid tests: short hourly horizons and the linopy reference."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

import microgrid as mg

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def linopy_reference():
    """benchmarks/microgrid_linopy.py, the independent linopy formulation."""
    path = ROOT / "benchmarks" / "microgrid_linopy.py"
    spec = importlib.util.spec_from_file_location("microgrid_linopy_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def hours_2d() -> pd.DatetimeIndex:
    return pd.date_range("2025-03-03", periods=48, freq="1h", tz="UTC")


@pytest.fixture
def plain_costs() -> mg.Costs:
    return mg.Costs(
        pv_usd_per_kwp_year=70.0,
        battery_usd_per_kwh_year=25.0,
        battery_usd_per_kw_year=15.0,
        generator_usd_per_kw_year=60.0,
        import_usd_per_kwh=0.06,
        fuel_usd_per_kwh=0.12,
    )


@pytest.fixture(scope="session")
def hawk_costs() -> mg.Costs:
    """Costs of the Hawk-based model tests: with export and a demand charge."""
    return mg.Costs(
        70, 25, 15, 60,
        import_usd_per_kwh=0.08, export_usd_per_kwh=0.03, fuel_usd_per_kwh=0.11,
        demand_charge_usd_per_kw_month=12.0,
    )


HAWK = "llnl-last-power-provisioning/Hawk_power_15_min.csv"


@pytest.fixture(scope="session")
def hawk_kw(data_dir) -> pd.Series:
    """Measured whole-system power of HLRS Hawk every 15 min [kW] (CC BY 4.0, Patki et al.
    ICS 2025), from its first non-zero reading, on a UTC index."""
    raw = pd.read_csv(data_dir / HAWK)
    index = pd.to_datetime(raw["timestamp_secs"], unit="s", utc=True)
    series = pd.Series(raw["measured_kW"].to_numpy(dtype=float), index=index, name="hawk_kw")
    return series[series.index >= "2023-03-17"]


@pytest.fixture(scope="session")
def hawk_3d_kw(hawk_kw) -> pd.Series:
    """Three gap-free days of Hawk at 15 min, 2023-06-05..07 UTC [kW]."""
    window = hawk_kw["2023-06-05":"2023-06-07"]
    return window.asfreq("15min")
