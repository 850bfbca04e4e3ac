"""What a planner sees: numbers with units, the site's clock, figures whose labels do not collide,
tables that keep their identifiers, and a page that fits a 1,280 px and a 1,920 px screen."""

from __future__ import annotations

import re
import shutil
import subprocess
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from aiload.metrics import plot_calendar_bands, plot_percentile_bands
from scenarios import figures, report_parts
from scenarios.formatting import number, quantity, split_unit


# --- numbers ------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    (71020643.69088274, "71,020,644"), (107.33167510575434, "107.3"), (0.0123456, "0.01235"),
    (-0.0, "0"), (0.0, "0"), (float("nan"), "n/a"), (float("inf"), "n/a"), (1234.5, "1,234"),
    (-5264635.09, "-5,264,635"), (12.5, "12.5"),
])
def test_number_precision_suits_the_size(value, text):
    assert number(value) == text


@pytest.mark.parametrize(("name", "value", "label", "text"), [
    ("lcoe_usd_per_mwh", 107.33167510575434, "lcoe", "107.3 USD/MWh"),
    ("battery_kwh", 159534.39673122772, "battery", "159,534 kWh"),
    ("export_revenue_usd", -0.0, "export revenue", "0 USD"),
    ("min_vm_pu", 0.9274, "min vm", "0.9274 pu"),
    ("served_energy_mwh_per_year", 661693.2, "served energy", "661,693 MWh/yr"),
    ("status", "optimal", "status", "optimal"),
    ("events", 403046, "events", "403,046"),
    ("mip_gap", float("nan"), "mip gap", "n/a"),
])
def test_quantity_reads_the_unit_from_the_name(name, value, label, text):
    assert quantity(name, value) == (label, text)


def test_split_unit_takes_the_longest_suffix():
    assert split_unit("lcoe_usd_per_mwh") == ("lcoe", "USD/MWh")
    assert split_unit("grid_energy_usd") == ("grid_energy", "USD")
    assert split_unit("bus") == ("bus", "")


def test_microgrid_costs_are_a_table_not_a_mapping():
    costs = {"pv_capital": 18220152.570705518, "grid_energy": 34017110.08735682,
             "export_revenue": -0.0, "carbon": 0.0}
    html = report_parts.microgrid_section({"pv_kwp": 165637.75, "annual_cost_usd": costs,
                                           "status": "optimal"})
    assert "{" not in html and "-0.0" not in html and "18220152.57" not in html
    assert "18,220,153" in html and "165,638 kWp" in html
    # shares of the total, computed by hand: 18.22 / 52.24 and 34.02 / 52.24
    assert "34.9%" in html and "65.1%" in html
    assert "Zero here: export revenue, carbon" in html


def test_nested_quantities_take_the_parents_unit():
    html = report_parts.quantities({"annual_cost_usd": {"fuel": 4753809.395431846}})
    assert "annual cost › fuel" in html and "4,753,809 USD" in html


def test_profile_sources_as_a_table_and_an_empty_set_explained():
    meta = {"profile_sources": {
        "llama2-70b-lora@8": "job-llama2-70b-lora-8xh100-sxm-8n-r0 (MLPerf Training v4.0, SMC; "
                             "measured)"}}
    html = report_parts.profile_sources(meta)
    assert "<th>workload</th>" in html and ">llama2-70b-lora<" in html and ">8<" in html
    assert ">measured<" in html and "{" not in html
    empty = report_parts.profile_sources({"profile_sources": {}})
    assert "{}" not in empty and "runs no training or fine-tuning jobs" in empty


def test_unserved_inference_demand_is_said():
    idx = pd.date_range("2025-01-01", periods=4, freq="1min", tz="UTC")
    power = pd.DataFrame({"requests_per_s": [10.0, 10.0, 20.0, 10.0],
                          "served_requests_per_s": [10.0, 10.0, 15.0, 10.0]}, index=idx)
    text = report_parts.inference_note(power, {})
    # demand (10+10+20+10)*60 = 3,000; served 2,700; 300 unserved = 10 %, in one minute
    assert "3,000 requests" in text and "2,700 served" in text
    assert "300 (10.00%) not served" in text and "0.01667 h" in text


def test_unavailable_figures_are_explained():
    table = pd.DataFrame({
        "group": ["ramps", "ramps", "levels"], "metric": ["ramp_up_p95_kw_per_s"] * 2 + ["max_kw"],
        "window": ["1s", "5s", ""], "value": [np.nan, np.nan, 3.0], "unit": ["kW/s"] * 2 + ["kW"],
        "available": [False, False, True],
        "note": ["window 1s is shorter than the step 60 s", "window 5s is shorter than the step 60 s",
                 ""]})
    text = report_parts.unavailable_note(table, "1min")
    assert "2 figures are not available" in text
    assert "window 1s is shorter than the step 60 s" in text and "facility.freq" in text


# --- grid tables --------------------------------------------------------------------------

def _n1() -> pd.DataFrame:
    t = pd.Timestamp("2025-07-09 18:00", tz="UTC")
    return pd.DataFrame({
        "element": ["none", "line 0", "line 1", "trafo 0"], "islanded_buses": [0, 0, 0, 0],
        "facility_islanded": [False] * 4, "converged_steps": [24] * 4,
        "min_vm_pu": [0.943, 0.95, 0.90, 0.93], "max_vm_pu": [1.05] * 4,
        "max_line_loading_percent": [4.5] * 4, "max_trafo_loading_percent": [3.9] * 4,
        "worst_time": [t] * 4})


def test_contingency_table_does_not_count_the_intact_case():
    caption, table = figures.contingency_table(_n1(), tz="America/New_York")
    assert "of 3 " in caption and "the 3 outages" in caption
    assert list(table["outage"]) == ["intact network", "line 1", "trafo 0", "line 0"]
    # 18:00 UTC in July is 14:00 in New York (EDT, UTC-4)
    assert set(table["worst hour"]) == {"2025-07-09 14:00"}
    # nothing islands: the islanding columns say nothing and are left out
    assert "facility islanded" not in table and "islanded buses" not in table
    assert table.shape[1] <= 7


def test_element_indexed_tables_keep_their_identifiers():
    from dataclasses import dataclass

    @dataclass
    class Fake:
        lines_relieved: pd.DataFrame

    relieved = pd.DataFrame({"loading_pre_percent": [0.65, 2.46], "loading_post_percent": [0.1, 2.0]},
                            index=pd.Index([18, 89]))
    tables = figures.grid_tables(Fake(relieved))
    frame = tables["lines relieved"]
    assert list(frame["line"]) == [18, 89]
    assert "loading pre [%]" in frame.columns


# --- figures ------------------------------------------------------------------------------

def _overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of visible tick labels of one axis whose drawn boxes intersect."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            boxes = [(t.get_text(), t.get_window_extent(renderer))
                     for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            for (ta, a), (tb, b) in combinations(boxes, 2):
                if a.overlaps(b):
                    found.append((ta, tb))
    return found


def _legend_clear_of_axes(fig) -> bool:
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        if any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes):
            return False
    return True


@pytest.fixture(scope="module")
def week():
    idx = pd.date_range("2025-01-01", periods=7 * 24 * 60, freq="1min", tz="UTC")
    rng = np.random.default_rng(0)
    it = 70_000 + 3_000 * np.sin(np.arange(len(idx)) / 600) + rng.normal(0, 200, len(idx))
    frame = pd.DataFrame({"it_kw": it, "losses_kw": 0.05 * it, "cooling_kw": 0.1 * it}, index=idx)
    frame["facility_kw"] = frame.sum(axis=1)

    class Load:
        power = frame
    return Load()


def test_facility_figures_have_no_colliding_labels_and_legends_off_the_data(week):
    figs = figures.facility_figures(week, tz="America/New_York")
    assert len(figs) >= 3
    for title, fig in figs:
        assert _overlaps(fig) == [], title
    stacked = figs[0][1]
    assert _legend_clear_of_axes(stacked)
    ax = stacked.axes[0]
    # the axis starts near the IT minimum (not at 0), and says so
    assert ax.get_ylim()[0] > 0 and "axis from" in ax.get_ylabel()
    assert "America/New_York" in ax.get_xlabel()


def test_calendar_bands_on_the_site_clock():
    idx = pd.date_range("2025-01-06", periods=14 * 24, freq="1h", tz="UTC")
    power = pd.Series(np.where(idx.hour == 17, 2000.0, 1000.0), index=idx, name="facility_kw")
    fig = plot_calendar_bands(power, tz="America/New_York")
    assert _overlaps(fig) == [] and _legend_clear_of_axes(fig)
    median = fig.axes[0].lines[0]
    y = np.asarray(median.get_ydata())
    # 17:00 UTC is 12:00 in New York in January (EST, UTC-5)
    assert int(np.argmax(y)) == 12
    assert "America/New_York" in fig.axes[0].get_xlabel()
    with pytest.raises(Exception, match="unknown time zone"):
        plot_calendar_bands(power, tz="Mars/Olympus")


def test_percentile_band_dates_are_readable():
    idx = pd.date_range("2025-01-01", periods=7 * 24 * 4, freq="15min", tz="UTC")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({f"r{i}": 5000 + rng.normal(0, 100, len(idx)) for i in range(5)}, index=idx)
    fig = plot_percentile_bands(frame, unit="kW")
    assert _overlaps(fig) == [] and _legend_clear_of_axes(fig)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert 3 <= len(labels) <= 9 and max(len(s) for s in labels) <= 6


# --- the page in a browser ------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
# the page's own width and every table wrapper's overflow, written into the DOM
MEASURE = ("<script>window.addEventListener('load',function(){var d=document.documentElement,"
           "o=0,w=document.querySelectorAll('.tw');for(var i=0;i<w.length;i++){"
           "if(w[i].scrollWidth>w[i].clientWidth+1)o++;}var e=document.createElement('div');"
           "e.textContent='PAGE '+d.scrollWidth+' VIEW '+window.innerWidth+' SPILL '+o+' OF '+w.length;"
           "e.id='aiload-measure';document.body.appendChild(e);});</script>")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_interconnection_report_fits_1280_and_1920(tmp_path):
    from scenarios.runner import run_scenario

    out = tmp_path / "out"
    run_scenario("campus-100mw-interconnection", out, progress=False,
                 overrides={"facility.end": "2025-01-03T00:00:00Z", "grid.contingency_hours": 2})
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "worst hour" in page and "intact network" in page
    assert not re.search(r"\d{7,}\.\d", page.split("<h2>Provenance")[0]), "a raw float is printed"
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    for width in (1280, 1920):
        dom = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / f'p{width}'}",
             f"--window-size={width},1000", "--virtual-time-budget=10000", "--dump-dom",
             measured.as_uri()], capture_output=True, text=True, timeout=120)
        found = re.search(r"PAGE (\d+) VIEW (\d+) SPILL (\d+) OF (\d+)", dom.stdout)
        assert found, dom.stderr[-2000:]
        page_w, view_w, spill, tables = map(int, found.groups())
        assert tables >= 3
        assert page_w <= view_w, f"page {page_w} px wider than the {view_w} px window"
        assert spill == 0, f"{spill} of {tables} tables overflow their column at {width} px"


def test_quantities_sharing_a_name_keep_their_units_apart():
    html = report_parts.quantities({"battery_kwh": 352.7, "battery_kw": 335.0, "pv_kwp": 2313.0})
    assert "<td>battery [kWh]</td>" in html and "<td>battery [kW]</td>" in html
    assert "<td>pv</td>" in html  # a unique name stays plain
