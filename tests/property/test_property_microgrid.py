"""microgrid.size on a tiny horizon under random loads, prices and limits: a named error (bad
input, or a sizing no limits allow), or a dispatch that balances every step and keeps every
limit it was given."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import event, given
from hypothesis import strategies as st
from property_strategies import assert_clear_error, fast, hostile_floats

import microgrid
from aiload.errors import AiloadError
from microgrid import Battery, Costs, Generator

INDEX = pd.date_range("2024-07-01", periods=6, freq="1h", tz="UTC")
price = st.floats(0.0, 500.0)


@fast(12)
@given(
    load=st.lists(st.floats(0.0, 2000.0), min_size=6, max_size=6),
    avail=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
    prices=st.tuples(price, price, price, price, st.floats(0.0, 0.5), st.floats(0.0, 0.5)),
    import_limit_kw=st.one_of(st.none(), st.floats(0.0, 3000.0)),
    max_energy_kwh=st.sampled_from([0.0, 500.0, math.inf]),
    max_generator_kw=st.sampled_from([0.0, 800.0, math.inf]),
    eta=st.floats(0.7, 1.0),
)
def test_dispatch_balances_and_keeps_limits(load, avail, prices, import_limit_kw, max_energy_kwh,
                                            max_generator_kw, eta):
    load_kw = pd.Series(load, index=INDEX, name="load_kw")
    a = pd.Series(avail, index=INDEX)
    costs = Costs(pv_usd_per_kwp_year=prices[0], battery_usd_per_kwh_year=prices[1],
                  battery_usd_per_kw_year=prices[2], generator_usd_per_kw_year=prices[3],
                  import_usd_per_kwh=prices[4], fuel_usd_per_kwh=prices[5])
    battery = Battery(charge_efficiency=eta, discharge_efficiency=eta, max_energy_kwh=max_energy_kwh)
    try:
        s = microgrid.size(load_kw, pv_availability=a, costs=costs, battery=battery,
                           generator=Generator(max_power_kw=max_generator_kw),
                           import_limit_kw=import_limit_kw)
    except AiloadError as err:  # e.g. no PV, storage or generator can cover a capped import
        assert_clear_error(err, input_error=False)
        event("infeasible")
        return
    event("sized")
    d = s.dispatch
    tol = 1e-6 * max(1.0, max(load))
    supply = d["pv_kw"] + d["battery_discharge_kw"] + d["generator_kw"] + d["grid_import_kw"]
    demand = d["load_kw"] + d["battery_charge_kw"] + d["grid_export_kw"] + d["dump_load_kw"]
    np.testing.assert_allclose(supply, demand, atol=tol)
    np.testing.assert_allclose(d["load_kw"], load, atol=1e-9)
    assert (d.drop(columns="battery_soc_kwh") >= -tol).all().all()
    np.testing.assert_allclose(d["pv_kw"] + d["pv_curtailed_kw"], s.pv_kwp * a, atol=tol)
    if import_limit_kw is not None:
        assert (d["grid_import_kw"] <= import_limit_kw + tol).all()
    assert (d["generator_kw"] <= s.generator_kw + tol).all() and s.generator_kw <= max_generator_kw + tol
    assert s.battery_kwh <= max_energy_kwh + tol
    assert (d["battery_soc_kwh"] <= s.battery_kwh + tol).all() and (d["battery_soc_kwh"] >= -tol).all()
    assert (np.minimum(d["battery_charge_kw"], d["battery_discharge_kw"]) <= tol).all()
    if s.battery_kwh <= tol:  # zero energy means zero battery power
        assert (d["battery_charge_kw"] <= tol).all() and (d["battery_discharge_kw"] <= tol).all()
    # state of charge follows the stored and delivered energy from one label to the next [kWh]
    soc = d["battery_soc_kwh"].to_numpy()
    step = eta * d["battery_charge_kw"].to_numpy() - d["battery_discharge_kw"].to_numpy() / eta
    np.testing.assert_allclose(soc[1:], soc[:-1] + step[:-1], atol=10 * tol)


@fast(40)
@given(values=st.lists(hostile_floats, min_size=6, max_size=6),
       which=st.sampled_from(["load", "avail", "price"]))
def test_hostile_series_and_prices_are_named_errors(values, which):
    good = pd.Series(100.0, index=INDEX, name="load_kw")
    series = pd.Series(values, index=INDEX, name="load_kw")
    try:
        costs = Costs(pv_usd_per_kwp_year=100.0, battery_usd_per_kwh_year=30.0,
                      battery_usd_per_kw_year=20.0, generator_usd_per_kw_year=60.0,
                      import_usd_per_kwh=series.rename(None) if which == "price" else 0.1)
        microgrid.size(series if which == "load" else good,
                       pv_availability=series.rename(None) if which == "avail" else None,
                       costs=costs, import_limit_kw=None)
    except AiloadError as err:
        assert_clear_error(err)  # an InputError: the import is unlimited, so always feasible
        event("refused")
        return
    event("sized")
    arr = np.array(values)
    assert np.isfinite(arr).all() and (arr >= 0).all()
    if which == "avail":
        assert (arr <= 1.1).all()
