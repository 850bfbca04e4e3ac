"""Violations are counted in summary.json and shown in the report (issue 26): the counts are
checked against numpy on the run's own voltage and loading arrays."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from scenarios.loader import load_scenario

SITE = """
name = "my-site"

[facility]
preset = "inference-1mw"
utilization = 0.5
start = 2025-06-03T10:00:00-04:00
end = 2025-06-03T16:00:00-04:00
freq = "1min"

[site]
timezone = "America/Chicago"

[grid]
network = "cigre_mv"
bus = 5
studies = ["timeseries"]

[grid.limits]
vm_min_pu = 0.91
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    pytest.importorskip("grid")
    from scenarios.runner import run_scenario

    folder = tmp_path_factory.mktemp("site")
    (folder / "my-site.toml").write_text(SITE, encoding="utf-8")
    return run_scenario(folder / "my-site.toml", folder / "out", progress=False)


def test_summary_counts_violations_per_element_as_numpy_does(run):
    res = run.grid["timeseries"]
    record = json.loads((run.out_dir / "summary.json").read_text())["grid"]["timeseries"][
        "violations"]
    assert record["limits"] == {"vm_min_pu": 0.91, "vm_max_pu": 1.05,
                                "loading_max_percent": 100.0}
    assert record["time_zone"] == "America/Chicago"
    vm = res.vm_pu.to_numpy()
    low = vm < 0.91
    lines = res.line_loading_percent.to_numpy() > 100.0
    trafos = res.trafo_loading_percent.to_numpy() > 100.0
    assert low.any() and (lines.any() or trafos.any()), "the case must violate both limits"
    elements = int((low.sum(axis=0) > 0).sum() + (lines.sum(axis=0) > 0).sum()
                   + (trafos.sum(axis=0) > 0).sum())
    assert record["elements"] == elements
    any_step = low.any(axis=1) | lines.any(axis=1) | trafos.any(axis=1)
    assert record["hours_with_any"] == pytest.approx(any_step.sum() * 1.0)  # 1-h grid steps
    by = {(r["element"], r["quantity"]): r for r in record["by_element"]}
    for j in np.flatnonzero(low.sum(axis=0)):
        r = by[(f"bus {res.vm_pu.columns[j]}", "undervoltage")]
        assert r["steps"] == int(low[:, j].sum()) and r["hours"] == float(low[:, j].sum())
        k = int(np.argmin(vm[:, j]))
        assert r["worst"] == pytest.approx(vm[k, j], abs=1e-12)
        # the worst time on the site's clock, as written in summary.json
        stamp = pd.Timestamp(r["worst_time"])
        assert stamp == res.vm_pu.index[k] and stamp.utcoffset() == pd.Timedelta(hours=-5)


def test_report_shows_the_violations_on_the_site_clock(run):
    html = (run.out_dir / "report.html").read_text()
    res = run.grid["timeseries"]
    low = res.vm_pu.to_numpy() < 0.91
    worst = int(np.argmin(np.nanmin(res.vm_pu.to_numpy(), axis=1)))
    when = res.vm_pu.index[worst].tz_convert("America/Chicago").strftime("%Y-%m-%d %H:%M")
    assert "Violations:" in html and "worst at (America/Chicago)" in html
    assert when in html
    n = int((low.sum(axis=0) > 0).sum())
    assert len(re.findall(r"undervoltage \(below 0\.91 pu\)", html)) == n


def test_no_violation_is_said(tmp_path):
    pytest.importorskip("grid")
    from scenarios.runner import run_scenario

    path = tmp_path / "s.toml"
    path.write_text(SITE.replace("vm_min_pu = 0.91", "vm_min_pu = 0.6\nvm_max_pu = 1.4\n"
                                 "loading_max_percent = 200.0"), encoding="utf-8")
    out = run_scenario(path, tmp_path / "out", progress=False, overrides={
        "facility.end": "2025-06-03T12:00:00-04:00", "outputs.facility_parquet": False})
    record = out.summary["grid"]["timeseries"]["violations"]
    assert record["elements"] == 0 and record["by_element"] == []
    assert "Violations: none." in (out.out_dir / "report.html").read_text()
