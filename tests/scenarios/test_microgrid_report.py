"""The report's microgrid cost table (USD/yr, USD/MWh, share) and the cost set's sources."""

from __future__ import annotations

import re
from types import MappingProxyType

import microgrid as mg
from scenarios import report_parts
from scenarios.loader import load_scenario, resolve_source


def _cells(html: str) -> list[list[str]]:
    return [re.findall(r"<t[dh]>(.*?)</t[dh]>", row) for row in html.split("<tr>")[1:]]


def test_cost_table_per_mwh_and_share_by_hand():
    # 2,000 MWh served: 1,000,000 USD/yr of fuel = 500 USD/MWh, 80 % of 1,250,000
    rows = _cells(report_parts.cost_table(
        {"fuel": 1_000_000.0, "pv_capital": 250_000.0, "carbon": 0.0}, 2000.0))
    assert rows[0] == ["term", "USD/yr", "USD/MWh served", "share"]
    assert rows[1] == ["fuel", "1,000,000", "500.0", "80.0%"]
    assert rows[2] == ["pv capital", "250,000", "125.0", "20.0%"]
    assert rows[3] == ["total", "1,250,000", "625.0", "100.0%"]
    assert len(rows) == 4  # zero terms are listed apart, not as rows


def test_bundled_campus_report_lists_the_cost_figures_with_sources_and_entries():
    section = load_scenario(resolve_source("campus-100mw-microgrid")).microgrid
    figures = report_parts.microgrid_cost_figures(section)
    parts = {f["part"]: f for f in figures}
    # both generator technologies of the scenario, with the fuel each burns
    assert parts["generator: gas engine"]["source"] == mg.technology("gas_engine").citation
    assert parts["generator: diesel"]["entry"] == "approximate"
    assert parts["fuel: diesel"]["entry"] == "derived"
    assert parts["PV"]["source"].startswith("NREL (2024). 2024 Electricity Annual Technology")
    assert parts["demand charge"] == {"part": "demand charge", "figure": "10 USD/kW/month",
                                      "entry": "assumption",
                                      "source": "the scenario file, [microgrid.costs]"}
    assert {f["entry"] for f in figures} <= {"transcribed", "approximate", "derived",
                                            "assumption"}
    # the summary holds the Sizing's read-only mapping, not a dict, when the report is made
    html = report_parts.microgrid_section(
        {"pv_kwp": 1.0, "served_energy_mwh_per_year": 10.0,
         "annual_cost_usd": MappingProxyType({"pv_capital": 100.0})}, figures)
    assert "Cost figures used and their sources" in html and "Ong, S., Campbell" in html
    assert "<h3>Annual cost by term</h3>" in html and "<td>10</td>" in html
