"""Issue 26 item 5: every stage of `aiload run` that can take more than a few seconds says so
on stderr, in order, through the runner's one mechanism (``aiload run: NAME ...`` lines; the
facility model's bar on a terminal), the flexible study's facility run under its limit and the
closed loop included."""

from __future__ import annotations

import pytest

import grid
from scenarios.runner import run_scenario

# the bundled flexible scenario over two days (as tests/scenarios/test_flexible_scenario.py)
SHORT = {"facility.start": "2025-07-14T00:00:00Z", "facility.end": "2025-07-16T00:00:00Z",
         "grid.flexible.cosim_start": "2025-07-14T12:00:00Z",
         "grid.flexible.cosim_end": "2025-07-15T12:00:00Z"}


@pytest.mark.slow  # ~9 s: the facility model three times and a day in closed loop
def test_each_long_stage_has_a_line_and_the_facility_reruns_a_bar(tmp_path, capsys,
                                                                    monkeypatch):
    bars = {}
    for name in ("curtailment_cost", "cosimulate"):
        original = getattr(grid, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            bars[_name] = kwargs.get("progress")
            return _original(*args, **kwargs)

        monkeypatch.setattr(grid, name, spy)
    # as on a terminal: the facility runs show their bars (their own stderr lines, not checked)
    monkeypatch.setattr("scenarios.runner._on_terminal", lambda: True)
    res = run_scenario("campus-100mw-flexible", tmp_path / "out", overrides=SHORT,
                       progress=True)
    firm_mw = res.grid["flexible_interconnection"].firm_mw
    peak_mw = res.facility.power["facility_kw"].max() / 1000.0  # facility and grid both at 1 h
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("aiload run: ") and line.endswith(" ...")]
    expected = [
        "aiload run: facility ...",
        "aiload run: metrics ...",
        "aiload run: grid studies: time-series power flow, 48 steps ...",
        "aiload run: grid studies: hosting capacity ...",
        "aiload run: grid studies: flexible interconnection: headroom per step ...",
        # the study's firm size and the campus's own two-day peak
        f"aiload run: grid studies: flexible interconnection: firm {firm_mw:,.1f} MW; "
        f"{peak_mw:,.1f} MW under its implied limit through the facility model (48 steps of 1h, control period 5min), then "
        "the network cross-check ...",
        "aiload run: grid studies: closed loop facility + network, 5min steps ...",
        "aiload run: writing outputs ...",
        "aiload run: report ...",
    ]
    assert lines == expected
    assert bars == {"curtailment_cost": True, "cosimulate": True}


def test_microgrid_sizing_says_how_it_solves(tmp_path, capsys):
    res = run_scenario("campus-100mw-microgrid", tmp_path / "out", progress=True,
                       overrides={"facility.end": "2025-01-02T00:00:00Z",
                                  "outputs.report": False})
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("aiload run: microgrid sizing")]
    # a day is too short for the decomposition: the exact LP, with the sizing's own reason
    assert res.sizing.method == "exact"
    assert lines == ["aiload run: microgrid sizing, 24 steps ...",
                     "aiload run: microgrid sizing: exact LP, 24 steps (HiGHS): "
                     f"{res.sizing.method_reason} ..."]
