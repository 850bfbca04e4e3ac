"""Bad input to microgrid sizing, PV availability and coarsening is refused by name, with the fix.

Each case was a raw pandas/pvlib traceback or a silently wrong result before (a reversed
series sized backwards, a series in MW sized as kW, an outage window outside the horizon
dropped, a weather year in kelvin or kW/m2 giving ~0 PV); the good-input counterparts check
that the fix changed nothing for input that was right.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import microgrid as mg
from aiload.errors import InputError, InputWarning
from microgrid import plots

IDX = pd.date_range("2025-01-01", periods=24, freq="h", tz="UTC")
LOAD_KW = pd.Series(1000.0 + 100.0 * np.sin(np.arange(24) / 3.0), IDX, name="facility_kw")
COSTS = mg.Costs(60, 30, 20, 50, import_usd_per_kwh=0.05, fuel_usd_per_kwh=0.10)


def size(load=LOAD_KW, **kwargs):
    return mg.size(load, **({"pv_availability": None, "costs": COSTS, "import_limit_kw": 2000}
                            | kwargs))


def message_of(call) -> str:
    with pytest.raises(InputError) as err:
        call()
    return str(err.value)


def test_a_reversed_load_is_refused_not_sized_backwards():
    # a reversed index keeps freq = -1 h, and was sized as given
    assert ("load_kw: expected equally spaced, increasing labels; the step changes at label 1 "
            "(2025-01-01 23:00:00+00:00 -> 2025-01-01 22:00:00+00:00)"
            in message_of(lambda: size(LOAD_KW.iloc[::-1])))


def test_a_monthly_load_is_refused_by_name():
    monthly = pd.Series([1000.0] * 3, pd.date_range("2025-01-01", periods=3, freq="MS", tz="UTC"))
    assert ("load_kw: the index's freq 'MS' has no fixed length"
            in message_of(lambda: size(monthly)))


@pytest.mark.parametrize(("name", "message"), [
    ("facility_mw", "load_kw: the series is named 'facility_mw', a power in MW; microgrid.size "
                    "takes kW. Convert it, e.g. (series * 1000).rename('facility_kw')."),
    ("power_W", "named 'power_W', a power in W; microgrid.size takes kW. Convert it, e.g. "
                "(series / 1000)"),
    ("load_GW", "a power in GW"),
])
def test_a_load_named_in_another_unit_is_refused(name, message):
    # 1 MW named facility_mw was sized as a 1 kW site
    assert message in message_of(lambda: size((LOAD_KW / 1e3).rename(name)))


def test_numpy_numbers_are_numbers_and_bools_are_not():
    a = size(import_limit_kw=np.int64(1050))
    b = size(import_limit_kw=1050)
    assert a.total_annual_cost_usd == b.total_annual_cost_usd
    assert a.generator_kw == b.generator_kw
    assert ("size: import_limit_kw must be a number >= 0 [kW], got True"
            in message_of(lambda: size(import_limit_kw=True)))
    assert ("Battery.charge_efficiency: expected a fraction in (0, 1], got True"
            in message_of(lambda: mg.Battery(charge_efficiency=True)))


@pytest.mark.parametrize(("outages", "message"), [
    (5, "size: outages must be a boolean Series on load_kw.index or a list of (start, end) "
        "pairs of tz-aware timestamps, got int 5"),
    ("2025-01-01", "got str '2025-01-01'"),
    (pd.Series(False, IDX.tz_convert("America/New_York")),
     "got dtype bool on 24 labels from 2024-12-31 19:00:00-05:00 (load_kw: 24 from "
     "2025-01-01 00:00:00+00:00); reindex it onto load_kw.index first"),
])
def test_bad_outages_are_named(outages, message):
    assert message in message_of(lambda: size(outages=outages))


def test_an_outage_outside_the_horizon_is_named_in_a_warning():
    # it was dropped without a word; a shortened run of a scenario with a fixed outage list
    # is legitimate, so it warns rather than refuses
    window = (pd.Timestamp("2026-01-01 03:00", tz="UTC"), pd.Timestamp("2026-01-01 05:00", tz="UTC"))
    with pytest.warns(InputWarning) as caught:
        outside = size(outages=[window])
    assert str(caught[0].message) == (
        "size: outage (2026-01-01 03:00:00+00:00, 2026-01-01 05:00:00+00:00) covers no step of "
        "load_kw (2025-01-01 00:00:00+00:00 to 2025-01-02 00:00:00+00:00) and is left out; "
        "check its year and time zone if it should apply.")
    assert outside.total_annual_cost_usd == size().total_annual_cost_usd


def test_an_outage_partly_inside_the_horizon_is_kept():
    window = (IDX[-2], IDX[-1] + pd.Timedelta("5h"))
    mask = pd.Series(IDX >= IDX[-2], IDX)
    a, b = size(outages=[window]), size(outages=mask)
    assert a.total_annual_cost_usd == b.total_annual_cost_usd
    assert (a.dispatch["grid_import_kw"].iloc[-2:] == 0).all()


@pytest.mark.parametrize("price", [pd.Series(0.05, IDX).to_frame(), np.full(24, 0.05)])
def test_a_price_table_is_named_by_type_not_dumped(price):
    text = message_of(lambda: mg.Costs(60, 30, 20, 50, import_usd_per_kwh=price))
    assert text.startswith(f"Costs.import_usd_per_kwh: expected a number or a pandas Series, "
                           f"got a {type(price).__name__}; pass one column as a Series")
    assert len(text) < 300


def test_a_discount_rate_in_percent_is_refused():
    assert ("capital_recovery_factor: rate: expected a finite number >= 0 and < 1 [1/year], got "
            "7. Give the rate as a fraction (0.07 for 7 %/year), not percent."
            in message_of(lambda: mg.capital_recovery_factor(7, 20)))


@pytest.fixture(scope="module")
def weather():
    return mg.default_weather()[0]


def own(weather, **columns):
    return lambda: mg.pv_availability(weather.assign(**columns), latitude=36.1, longitude=-79.9)


def test_weather_in_other_units_is_refused(weather):
    # kelvin gave ~0 kW/kWp all year; kW/m2 gave 0
    assert ("pv_availability: weather['temp_air'] has 8760 value(s) outside [-95, 65], first "
            "283.15 at 2023-01-01 00:00:00-05:00. Is it in kelvin (subtract 273.15)"
            in message_of(own(weather, temp_air=weather.temp_air + 273.15)))
    assert ("pv_availability: weather['ghi'] peaks at 1.013 over a whole year; expected W/m2"
            in message_of(own(weather, ghi=weather.ghi / 1e3, dni=weather.dni / 1e3,
                              dhi=weather.dhi / 1e3)))
    assert ("weather['wind_speed'] has 8760 value(s) outside [0, 120], first -6.3"
            in message_of(own(weather, wind_speed=-weather.wind_speed - 0.1)))


def test_weather_as_text_or_empty_is_refused(weather):
    assert ("pv_availability: weather['ghi'] holds object values; expected numbers. Convert it, "
            "e.g. pd.to_numeric(weather['ghi'])."
            in message_of(own(weather, ghi=weather.ghi.astype(str))))
    assert ("pv_availability: weather has no rows"
            in message_of(lambda: mg.pv_availability(weather.iloc[:0], latitude=36.1,
                                                     longitude=-79.9)))


def test_own_weather_in_range_gives_the_bundled_result(weather):
    _, meta = mg.default_weather()
    mine = mg.pv_availability(weather, latitude=meta["latitude"], longitude=meta["longitude"],
                              altitude=meta["altitude"])
    pd.testing.assert_series_equal(mine, mg.pv_availability())


@pytest.mark.parametrize(("index", "message"), [
    (IDX[:0], "pv_availability: index is empty"),
    (pd.date_range("2025-01-01", periods=3, freq="MS", tz="UTC"),
     "index: the index's freq 'MS' has no fixed length"),
])
def test_pv_availability_refuses_a_bad_index(index, message):
    assert message in message_of(lambda: mg.pv_availability(index=index))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"freq": "x"}, "coarsen: freq must be a fixed step such as '1h' or '15min', got 'x'"),
    ({"freq": 7200}, "got 7200"),
    ({"freq": "2h", "pv_availability": np.ones(24)},
     "coarsen: pv_availability is on another index than load_kw"),
    ({"freq": "2h", "pv_availability": pd.Series(np.nan, IDX)},
     "pv_availability: 24 NaN value(s), first at 2025-01-01 00:00:00+00:00"),
    ({"freq": "2h", "pv_availability": pd.Series(-0.1, IDX)}, "pv_availability: 24 negative"),
    ({"freq": "2h", "pv_availability": pd.Series(800.0, IDX)},
     "pv_availability: 24 value(s) above 1.1 kW/kWp"),
])
def test_coarsen_refuses_bad_input(kwargs, message):
    assert message in message_of(lambda: mg.coarsen(LOAD_KW, **kwargs))


def test_coarsen_of_good_input_is_block_means():
    pv = pd.Series(np.linspace(0.0, 0.9, 24), IDX)
    agg = mg.coarsen(LOAD_KW, freq="2h", pv_availability=pv)
    assert np.allclose(agg.pv_availability.to_numpy(), pv.to_numpy().reshape(12, 2).mean(axis=1),
                       rtol=0, atol=1e-15)


@pytest.fixture(scope="module")
def sized():
    return size()


@pytest.mark.parametrize(("call", "message"), [
    (lambda s: plots.plot_dispatch_week(s, start="garbage"),
     "start: expected a timestamp such as '2025-07-01', got 'garbage'"),
    (lambda s: plots.plot_dispatch_week(s, start="2030-01-01"),
     "start: the 7 day(s) from 2030-01-01 00:00:00+00:00 hold no step of the dispatch "
     "(2025-01-01 00:00:00+00:00 to 2025-01-01 23:00:00+00:00); pick a start inside it."),
    (lambda s: plots.plot_soc(s, days=0), "days: expected a finite number > 0 [day], got 0"),
    (lambda s: plots.plot_soc(s, days="7"), "days: expected a finite number > 0 [day], got '7'"),
    (lambda s: plots.plot_dispatch_week(5), "sizing: expected a microgrid.Sizing (the result "
                                            "of microgrid.size), got int"),
    (lambda s: plots.plot_import_duration([s]), "sizings: expected a non-empty mapping of "
                                                "label -> microgrid.Sizing"),
    (lambda s: plots.plot_cost_breakdown({}), "got an empty mapping"),
    (lambda s: plots.plot_cost_breakdown({"a": 5}), "sizings['a']: expected a microgrid.Sizing"),
])
def test_plots_refuse_bad_arguments(sized, call, message):
    # each was an IndexError, StopIteration, AttributeError or a pandas parse error
    assert message in message_of(lambda: call(sized))


def test_numpy_numbers_in_the_configuration_are_numbers():
    # 'expected a non-negative number, got np.int64(60)' refused good input
    a = mg.Costs(np.int64(60), 30, 20, 50, import_usd_per_kwh=np.float64(0.05),
                 fuel_usd_per_kwh=np.float32(0.25))
    assert a == mg.Costs(60.0, 30, 20, 50, import_usd_per_kwh=0.05, fuel_usd_per_kwh=0.25)
    assert type(a.pv_usd_per_kwp_year) is float
    assert mg.Battery(charge_efficiency=np.float32(0.5)).charge_efficiency == 0.5
    assert mg.Generator(max_power_kw=np.int64(5000), min_load_fraction=np.float32(0.25),
                        unit_size_kw=100) == mg.Generator(max_power_kw=5000.0,
                                                          min_load_fraction=0.25,
                                                          unit_size_kw=100)
    assert "got np.True_" in message_of(lambda: mg.Costs(np.bool_(True), 30, 20, 50,
                                                         import_usd_per_kwh=0.05))


def test_technology_and_cost_set_arguments_are_checked():
    diesel = mg.technology("diesel")
    # a negative fuel price gave a negative price per kWh; text a TypeError
    assert ("fuel_usd_per_mmbtu: expected a finite number >= 0 [USD/MMBtu], got -1."
            in message_of(lambda: diesel.fuel_usd_per_kwh(-1)))
    assert "got '3' (str)" in message_of(lambda: diesel.fuel_usd_per_kwh("3"))
    assert diesel.fuel_usd_per_kwh(0.0) == diesel.variable_om_usd_per_mwh / 1000.0
    assert ("unit_commitment: expected True or False, got 'yes'"
            in message_of(lambda: diesel.generator(unit_commitment="yes")))
    # '2025' was refused as 'no figures for year '2025'; expected one of [2025, 2030]'
    assert ("cost set 'atb2024-moderate': year must be an int such as 2025 (or None for the "
            "first), got '2025' (str)" in message_of(lambda: mg.costs("atb2024-moderate",
                                                                      year="2025")))
    assert mg.costs("atb2024-moderate", year=np.int64(2030)) == mg.costs("atb2024-moderate",
                                                                         year=2030)


def test_a_price_in_usd_per_mwh_is_named_in_a_warning():
    # 50 'USD/kWh' (50 USD/MWh given as per kWh) sizes a site against a 1000x price
    costs = mg.Costs(60, 30, 20, 50, import_usd_per_kwh=pd.Series(50.0, IDX))
    with pytest.warns(InputWarning) as caught:
        size(costs=costs)
    assert [str(w.message) for w in caught if "median" in str(w.message)] == [
        "size: costs.import_usd_per_kwh has a median of 50 USD/kWh, above 5; is it in USD/MWh? "
        "Divide by 1000 for USD/kWh."]


def test_plausible_prices_raise_no_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        size(costs=mg.Costs(60, 30, 20, 50, import_usd_per_kwh=pd.Series(
            np.where(IDX.hour == 18, 4.0, 0.05), IDX), fuel_usd_per_kwh=0.3))


@pytest.mark.parametrize(("shift", "centred"), [("1h", "+1.00 h"), ("-5h", "-5.00 h")])
def test_weather_labels_shifted_from_the_sun_are_named_in_a_warning(weather, shift, centred):
    # hour-ending TMY labels read as interval starts (+1 h), or a local clock labelled UTC
    _, meta = mg.default_weather()
    shifted = weather.set_axis(weather.index + pd.Timedelta(shift))
    with pytest.warns(InputWarning) as caught:
        mg.pv_availability(shifted, latitude=meta["latitude"], longitude=meta["longitude"])
    assert [str(w.message) for w in caught if "solar noon" in str(w.message)] == [
        f"pv_availability: the weather's irradiance is centred {centred} from solar noon "
        "(GHI-weighted); its labels look shifted. Label each row by the START of its interval "
        "(TMY files are hour-ending: shift them back one step) in the right time zone."]


def test_weather_labelled_by_interval_start_raises_no_timing_warning(weather):
    import warnings

    _, meta = mg.default_weather()
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        mg.pv_availability(weather, latitude=meta["latitude"], longitude=meta["longitude"])


def test_a_microsecond_index_without_freq_is_sized_as_the_same_hours():
    # asi8 of a datetime64[us] index is in microseconds: an hour was taken for 3.6 s, and the
    # battery came out at 15 kWh instead of 5,273
    idx = pd.date_range("2025-06-01", periods=72, freq="h", tz="UTC")
    pv = mg.pv_availability(index=idx)
    prices = np.where(idx.hour > 16, 0.3, 0.05)

    def run(index):
        costs = mg.Costs(60, 30, 20, 50, import_usd_per_kwh=pd.Series(prices, index),
                         fuel_usd_per_kwh=0.5)
        return size(pd.Series(1000.0, index, name="facility_kw"), costs=costs,
                    pv_availability=pv.set_axis(index), import_limit_kw=800,
                    ramp_limit_kw_per_h=100)

    a, b = run(idx), run(pd.DatetimeIndex(idx.as_unit("us"), freq=None))
    assert a.battery_kwh > 1000
    assert (b.battery_kwh, b.pv_kwp, b.total_annual_cost_usd) == (
        a.battery_kwh, a.pv_kwp, a.total_annual_cost_usd)


def test_a_leap_weather_year_is_refused_with_a_recipe_that_works(weather):
    # 8784 h was refused as 'pass a full weather year' although it is one
    _, meta = mg.default_weather()
    site = {"latitude": meta["latitude"], "longitude": meta["longitude"]}
    year = weather.set_axis(pd.date_range("2024-01-01", periods=8760, freq="h",
                                          tz=weather.index.tz))
    leap = pd.concat([year, year.iloc[-24:].set_axis(year.index[-24:] + pd.Timedelta("1D"))])
    text = message_of(lambda: mg.pv_availability(leap, **site, index=IDX))
    assert "the weather covers 8784 h, expected one 8760 h year" in text
    assert "(a leap year: drop 29 February and relabel the rest onto a non-leap year" in text
    # the recipe in the message, run as written
    weather = leap
    w = weather[~((weather.index.month == 2) & (weather.index.day == 29))]
    w.index = pd.date_range('2023-01-01', periods=len(w), freq=w.index[1] - w.index[0],
                            tz=w.index.tz)
    assert mg.pv_availability(w, **site, index=IDX).sum() > 0


def test_a_nullable_float_load_is_sized_as_the_float_one():
    a = size(LOAD_KW.astype("Float64"))
    b = size(LOAD_KW)
    assert a.total_annual_cost_usd == b.total_annual_cost_usd
    with_na = LOAD_KW.astype("Float64").copy()
    with_na.iloc[3] = pd.NA
    assert "load_kw: 1 NaN value(s), first at 2025-01-01 03:00" in message_of(lambda: size(with_na))
