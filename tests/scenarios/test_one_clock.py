"""One clock per report (issue 26): every time axis and time column of a report is on the
site's time zone and names it."""

from __future__ import annotations

import dataclasses

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
import pytest

from scenarios import figures, report

ZONE = "America/Chicago"
IDX = pd.date_range("2025-07-01", periods=6, freq="1h", tz="UTC")


def _first_x(ax) -> pd.Timestamp:
    x = ax.lines[0].get_xdata()[0]
    x = mdates.num2date(x) if isinstance(x, (float, np.floating)) else x
    return pd.Timestamp(x).tz_localize(None) if pd.Timestamp(x).tz else pd.Timestamp(x)


def test_grid_figures_on_the_site_clock():
    grid = pytest.importorskip("grid")
    from scenarios.schema import GridSection

    load = pd.Series([1.0, 2.0, 1.5, 1.0, 2.0, 1.0], IDX, name="facility_mw")
    res = grid.timeseries(grid.networks.load("cigre_mv"), load, bus=5)
    section = GridSection(network="cigre_mv", bus=5, studies=["timeseries"])
    figs = dict(figures.grid_figures({"timeseries": res, "load_mw": load}, section, tz=ZONE))
    both = figs["Facility load [MW] and voltage at the facility bus [pu]"].axes
    assert both[1].get_xlabel() == f"time ({ZONE})"
    # 00:00 UTC on 1 July is 19:00 the day before in Chicago (CDT, UTC-5)
    assert _first_x(both[0]) == pd.Timestamp("2025-06-30 19:00")
    envelope = figs["Voltage envelope at the facility bus [pu]"].axes[0]
    assert envelope.get_xlabel() == f"time ({ZONE})"
    # the daily windows are the site's days: 19:00-23:00 on 30 June and 00:00 on 1 July
    assert _first_x(envelope) == pd.Timestamp("2025-06-30")


@dataclasses.dataclass(frozen=True)
class _Flexible:
    events: pd.DataFrame
    violations: pd.DataFrame
    violation_steps: int = 1


def test_event_and_violation_tables_on_the_site_clock():
    pytest.importorskip("grid")
    events = pd.DataFrame({"start": [IDX[1]], "end": [IDX[3]], "target_kw": [1000.0]})
    violations = pd.DataFrame({"time": [IDX[2]], "element": ["bus 5"], "quantity": ["vm_pu"],
                               "value": [0.93], "limit": [0.94]})
    tables = figures.grid_tables(_Flexible(events, violations), tz=ZONE)
    event_table = next(t for k, t in tables.items() if k.startswith("events"))
    assert list(event_table.columns[:2]) == [f"start ({ZONE})", f"end ({ZONE})"]
    assert event_table.iloc[0, 0] == "2025-06-30 20:00"
    left = next(t for k, t in tables.items() if k.startswith("violations"))
    assert left[f"time ({ZONE})"].tolist() == ["2025-06-30 21:00"]


def test_microgrid_plots_on_the_site_clock():
    mg = pytest.importorskip("microgrid")
    load = pd.Series(1000.0, IDX, name="load_kw")
    sizing = mg.size(load, pv_availability=None, costs=mg.Costs(
        pv_usd_per_kwp_year=100.0, battery_usd_per_kwh_year=50.0, battery_usd_per_kw_year=10.0,
        generator_usd_per_kw_year=80.0, fuel_usd_per_kwh=0.2, import_usd_per_kwh=0.1,
        demand_charge_usd_per_kw_month=0.0), import_limit_kw=None)
    from microgrid import plots

    for fig in (plots.plot_dispatch_week(sizing, tz=ZONE), plots.plot_soc(sizing, tz=ZONE)):
        ax = fig.axes[0]
        assert ax.get_xlabel() == f"time ({ZONE})"
    soc = plots.plot_soc(sizing, tz=ZONE).axes[0]
    assert _first_x(soc) == pd.Timestamp("2025-06-30 19:00")
    assert plots.plot_soc(sizing).axes[0].get_xlabel() == "time (UTC)"


def test_sweep_figures_on_the_site_clock(monkeypatch):
    import types

    import aiload.metrics

    seen = []

    def bands(frame, **kwargs):
        seen.append(frame.index.tz)
        return figures.Figure()

    monkeypatch.setattr(aiload.metrics, "plot_percentile_bands", bands)
    case = types.SimpleNamespace(case_id="case-0", overrides={"facility.utilization": 0.5})
    frame = pd.DataFrame({"r0": np.arange(6.0), "r1": np.arange(6.0) + 1}, index=IDX)
    comparison = pd.DataFrame({"case_id": ["case-0"], "metric": ["max_kw"], "window": [""],
                               "p50": [6.0]})
    page = report.render_sweep("s", [case], 2, comparison, {"case-0": frame}, tz=ZONE)
    assert [str(z) for z in seen] == [ZONE]
    assert f"site's clock ({ZONE})" in page


def test_time_columns_of_any_result_table_on_the_site_clock():
    # a result's table with a UTC time column (the queue's allocation is one): 20:00 UTC on
    # 2025-07-14 is 15:00 in Chicago (CDT, UTC-5), to the minute, the zone in the header
    @dataclasses.dataclass(frozen=True)
    class Result:
        allocation: pd.DataFrame

    table = pd.DataFrame({"allocated_mw": [1.0, 2.0],
                          "time": pd.to_datetime(["2025-07-14 20:00", "2025-01-14 20:00"],
                                                 utc=True)})
    tables = figures.grid_tables(Result(table), tz=ZONE)
    shown = tables["allocation"]
    column = [c for c in shown.columns if str(c).startswith("time")]
    assert column == ["time (America/Chicago)"]
    assert shown[column[0]].tolist() == ["2025-07-14 15:00", "2025-01-14 14:00"]  # CST in Jan
    assert table["time"].dt.tz is not None  # the result's own frame is left as it was
