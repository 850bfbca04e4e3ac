"""The short summary `aiload run` ends with (issue 26): peak, energy, hosting capacity,
violations, sizes and cost, from summary.json."""

from __future__ import annotations

from scenarios.runner import digest

SUMMARY = {
    "facility": {"energy_kwh": 876_000_000.0, "metrics": [
        {"metric": "max_kw", "window": "", "value": 123_456.0},
        {"metric": "mean_kw", "window": "", "value": 100_000.0},
        {"metric": "max_kw", "window": "15min", "value": 1.0}]},
    "grid": {
        "timeseries": {"bus": 11, "violations": {
            "limits": {"vm_min_pu": 0.94, "vm_max_pu": 1.06, "loading_max_percent": 100.0},
            "time_zone": "America/Chicago", "elements": 2, "hours_with_any": 1399.0,
            "steps": 8760, "by_element": [
                {"element": "bus 11", "quantity": "undervoltage", "unit": "pu", "steps": 1399,
                 "hours": 1399.0, "worst": 0.9312, "worst_time": "2025-07-01T15:00:00-05:00"},
                {"element": "bus 12", "quantity": "undervoltage", "unit": "pu", "steps": 10,
                 "hours": 10.0, "worst": 0.9201, "worst_time": "2025-07-02T16:00:00-05:00"},
                {"element": "line 3", "quantity": "overloading", "unit": "%", "steps": 5,
                 "hours": 5.0, "worst": 127.04, "worst_time": "2025-07-03T17:00:00-05:00"}]}},
        "hosting_capacity": {"bus": 11, "p_mw": 88.25, "element": "bus 11",
                             "quantity": "vm_pu"},
    },
    "microgrid": {"status": "optimal", "pv_kwp": 165637.75, "battery_kwh": 159534.4,
                  "battery_kw": 40000.0, "generator_kw": 0.0,
                  "total_annual_cost_usd": 52_237_262.6, "lcoe_usd_per_mwh": 107.33},
    "timings": {"facility_s": 12.34, "report_s": 3.0},
}


def test_digest_names_each_figure_with_its_unit():
    lines = digest(SUMMARY)
    assert lines[0] == "facility: peak 123.5 MW, mean 100.0 MW, energy 876,000 MWh"
    assert lines[1] == ("time-series power flow: 2 elements outside the limits (0.94-1.06 pu, "
                        "<= 100 %), 1,399 h with a violation; worst: undervoltage bus 12 0.9201 "
                        "pu at 2025-07-02 16:00; overloading line 3 127.0 % at 2025-07-03 17:00 "
                        "(America/Chicago)")
    assert lines[2] == ("hosting capacity at bus 11: 88.25 MW (binding: bus 11 voltage); "
                        "facility peak 123.5 MW")
    assert lines[3] == ("microgrid (optimal): PV 165,638 kWp, battery 159,534 kWh / 40,000 kW, "
                        "generator 0 kW; cost 52,237,263 USD/yr, LCOE 107.3 USD/MWh")
    assert lines[4] == "time: facility 12.3 s, report 3.0 s"


def test_digest_says_when_there_is_no_violation():
    summary = {**SUMMARY, "grid": {"timeseries": {"violations": {
        **SUMMARY["grid"]["timeseries"]["violations"], "elements": 0, "hours_with_any": 0.0,
        "by_element": []}}}, "microgrid": None, "timings": {}}
    assert digest(summary)[1] == ("time-series power flow: no violations (0.94-1.06 pu, "
                                  "<= 100 %, 8,760 steps)")


def test_aiload_run_ends_with_the_digest(tmp_path, capsys):
    from scenarios.cli import main

    path = tmp_path / "s.toml"
    path.write_text("""name = "s"
[facility]
preset = "inference-1mw"
start = 2025-06-01T00:00:00Z
end = 2025-06-01T03:00:00Z
freq = "1min"
[grid]
network = "cigre_mv"
bus = 5
studies = ["timeseries"]
""", encoding="utf-8")
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("  facility: peak ")
    assert out[2].startswith("  time-series power flow: ") and "elements outside" in out[2]
    assert out[-1].startswith("  time: facility ")
