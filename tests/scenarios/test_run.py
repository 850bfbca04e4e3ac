"""`aiload run`: bundled scenarios at a short horizon, checked against the library calls."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import aiload
import aiload.errors
import aiload.outputs
from aiload.metrics import summary as metrics_summary
from aiload.resampling import resample
from scenarios.cli import main
from scenarios.loader import ScenarioError, load_scenario
from scenarios.runner import run_scenario
SHORT_END = "2025-01-02T00:00:00Z"  # one day instead of the bundled year

SHORT = {"facility.end": SHORT_END}


def library_call(facility_fn, name: str, **extra):
    sc = load_scenario(name, overrides={**SHORT, **extra})
    f = sc.facility
    kw = dict(f.overrides)
    if f.utilization is not None:
        kw["utilization"] = f.utilization
    return facility_fn(f.preset, start=pd.Timestamp(f.start), end=pd.Timestamp(f.end),
                       freq=f.freq, seed=f.seed, progress=False, **kw)


def assert_metrics_equal(records, expected: pd.DataFrame):
    got = pd.DataFrame(records)
    assert list(got["metric"]) == list(expected["metric"])
    a = got["value"].astype(float).to_numpy()
    b = expected["value"].astype(float).to_numpy()
    # NaN (a figure the resolution cannot support) is written as null and must stay NaN
    assert np.array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-12)


@pytest.mark.parametrize("name", ["colocation-10mw", "inference-1mw"])
def test_nlr_cases_equal_the_library_calls(tmp_path, facility_fn, name):
    result = run_scenario(name, tmp_path / "out", overrides=SHORT, progress=False)
    assert {"facility.parquet", "metrics.csv", "summary.json", "report.html"} <= set(result.files)
    expected = library_call(facility_fn, name)
    written = pd.read_parquet(tmp_path / "out" / "facility.parquet")
    cols = ["it_kw", "losses_kw", "cooling_kw", "facility_kw"]
    pd.testing.assert_frame_equal(written[cols], expected.power[cols], check_freq=False)

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["seed"] == 0 and summary["aiload_version"] == aiload.__version__
    assert_metrics_equal(summary["facility"]["metrics"],
                         metrics_summary(expected.power["facility_kw"]))
    # energy by hand: interval means x 60 s
    by_hand = expected.power["facility_kw"].to_numpy().sum() * 60.0 / 3600.0
    assert math.isclose(summary["facility"]["energy_kwh"], by_hand, rel_tol=1e-9)


def test_unknown_facility_override_fails_before_the_simulation(tmp_path, facility_fn):
    with pytest.raises(aiload.errors.InputError,
                       match=r"\[facility\] preset = 'colocation-10mw'.*no parameter 'utilisation'"):
        run_scenario("colocation-10mw", tmp_path / "out", progress=False,
                     overrides={**SHORT, "facility.overrides": {"utilisation": 0.3}})
    assert not (tmp_path / "out").exists()


def test_failed_run_leaves_old_output_untouched_and_no_partial(tmp_path, facility_fn, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    # an earlier aiload output: its own files may be replaced, but only by a finished run
    (out / "summary.json").write_text("old")
    aiload.outputs.write_marker(out, "run", ["summary.json"])

    def broken_report(*args, **kwargs):
        raise RuntimeError("disk full while writing the report")

    # fail in the last step, after the other files were written to the temporary folder
    monkeypatch.setattr("scenarios.report.render", broken_report)
    with pytest.raises(RuntimeError, match="disk full"):
        run_scenario("inference-1mw", out, progress=False, overrides=SHORT)
    assert sorted(p.name for p in out.iterdir()) == [".aiload-output.json", "keep.txt",
                                                     "summary.json"]
    assert (out / "summary.json").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_bad_file_fails_before_any_computation(tmp_path, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the facility model ran before the scenario was validated")

    monkeypatch.setattr("scenarios.studies.facility", must_not_run)
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\n[facility]\npreset = "colocation-10mw"\nstart = 2025-01-01T00:00:00Z\n'
        'end = 2025-01-02T00:00:00Z\n[site]\nweather = "missing.csv"\n'
    )
    with pytest.raises(ScenarioError, match=r"bad\.toml.*\n.*line 7: field 'site\.weather'"):
        run_scenario(bad, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_study_step_finer_than_facility_step_fails_before_computing(tmp_path, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the facility model ran before the steps were checked")

    monkeypatch.setattr("scenarios.studies.facility", must_not_run)
    with pytest.raises(aiload.errors.InputError,
                       match=r"microgrid\.freq = '5min' is not a whole multiple of facility\.freq = '15min'"):
        run_scenario("campus-100mw-microgrid", tmp_path / "out", progress=False,
                     overrides={**SHORT, "microgrid.freq": "5min"})


@pytest.mark.parametrize(("over", "message"), [
    ({"microgrid.extra_generator_technologies": ["gas_engine"]},
     r"\['gas_engine'\] repeats a technology or the main generator's \('gas_engine'\)"),
    ({"microgrid.extra_generator_technologies": ["diesel", "diesel"]}, "repeats a technology"),
    ({"microgrid.options.method": "decompos"},
     r"options.method = 'decompos'; expected 'auto' \(the default: the fastest certified "
     r"method\), 'exact' or 'decompose'"),
])
def test_bad_microgrid_generators_or_method_fail_when_loaded(over, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario("campus-100mw-microgrid", overrides=over)


def test_replicates_write_percentile_bands(tmp_path, facility_fn):
    result = run_scenario("inference-1mw", tmp_path / "out", progress=False,
                          overrides={"facility.end": "2025-01-01T06:00:00Z",
                                     "facility.replicates": 3})
    bands = pd.read_parquet(tmp_path / "out" / "facility_bands.parquet")
    sc = load_scenario("inference-1mw", overrides={"facility.end": "2025-01-01T06:00:00Z"})
    direct = facility_fn("inference-1mw", start=pd.Timestamp(sc.facility.start),
                         end=pd.Timestamp(sc.facility.end), freq=sc.facility.freq, seed=0,
                         utilization=sc.facility.utilization, replicates=3, progress=False)
    pd.testing.assert_frame_equal(bands, direct.bands.add_suffix("_kw"), check_freq=False)
    # the series written is replicate 0, inside the band of all three
    written = pd.read_parquet(tmp_path / "out" / "facility.parquet")["facility_kw"]
    assert (bands.min(axis=1) <= written + 1e-9).all() and (written <= bands.max(axis=1) + 1e-9).all()
    assert result.summary["inputs"]["facility"]["replicates"] == 3


def test_cli_run_and_help(tmp_path, capsys, facility_fn):
    assert main([]) == 0
    text = capsys.readouterr().out
    assert "run" in text and "sweep" in text
    code = main(["run", "inference-1mw", "-o", str(tmp_path / "o"), "-q",
                 "--set", f"facility.end={SHORT_END}"])
    assert code == 0
    assert (tmp_path / "o" / "report.html").is_file()
    # a bad --set is reported with exit code 2 and the field named
    assert main(["run", "inference-1mw", "--set", "facility.utilization=2"]) == 2
    assert "facility.utilization" in capsys.readouterr().err


def test_interconnection_equals_grid_calls(tmp_path, grid_pkg):
    name = "campus-100mw-interconnection"
    # N-1 over case118's 186 branches takes a minute here; it is checked on CIGRE MV below
    result = run_scenario(name, tmp_path / "out", progress=False, overrides={
        **SHORT, "grid.studies": ["timeseries", "hosting_capacity", "load_loss"]})
    sc = result.scenario
    load_mw = (resample(result.facility.power["facility_kw"], sc.grid.freq) / 1000.0).rename("p_mw")
    net = grid_pkg.networks.load(sc.grid.network)
    limits = grid_pkg.Limits(vm_min_pu=sc.grid.limits.vm_min_pu, vm_max_pu=sc.grid.limits.vm_max_pu,
                             loading_max_percent=sc.grid.limits.loading_max_percent)
    direct = grid_pkg.timeseries(net, load_mw, bus=sc.grid.bus, power_factor=sc.grid.power_factor,
                                 limits=limits)
    written = pd.read_parquet(tmp_path / "out" / "grid_timeseries_vm_pu.parquet")
    np.testing.assert_allclose(written.to_numpy(), direct.vm_pu.to_numpy(), atol=1e-12)
    assert set(result.grid) == {"load_mw", "timeseries", "hosting_capacity", "load_loss"}
    hosting = grid_pkg.hosting_capacity(net, bus=sc.grid.bus, limits=limits,
                                        power_factor=sc.grid.power_factor)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["grid"]["hosting_capacity"]["p_mw"] == pytest.approx(hosting.p_mw, rel=1e-12)
    loss = grid_pkg.load_loss(net, bus=sc.grid.bus, p_mw=float(load_mw.max()),
                              power_factor=sc.grid.power_factor)
    assert summary["grid"]["load_loss"]["largest_rise_pu"] == pytest.approx(loss.largest_rise_pu)


def test_contingency_stage_equals_grid_call(tmp_path, grid_pkg):
    path = tmp_path / "n1.toml"
    path.write_text(
        'name = "n1"\n[facility]\npreset = "inference-1mw"\nutilization = 0.5\n'
        f'start = 2025-01-01T00:00:00Z\nend = {SHORT_END}\nfreq = "15min"\n'
        '[grid]\nnetwork = "cigre_mv"\nbus = 5\nstudies = ["contingency"]\ncontingency_hours = 2\n'
    )
    result = run_scenario(path, tmp_path / "out", progress=False)
    load_mw = (resample(result.facility.power["facility_kw"], "1h") / 1000.0).rename("p_mw")
    direct = grid_pkg.contingency(grid_pkg.networks.load("cigre_mv"), load_mw, bus=5, n_peak=2,
                                  power_factor=0.99)
    written = pd.read_parquet(tmp_path / "out" / "grid_contingency.parquet")
    assert list(written["element"]) == list(direct["element"])
    np.testing.assert_allclose(written["min_vm_pu"].to_numpy(), direct["min_vm_pu"].to_numpy(),
                               rtol=1e-12)
    assert "contingency" in (tmp_path / "out" / "report.html").read_text()


def test_microgrid_equals_size_call(tmp_path, microgrid_pkg):
    name = "campus-100mw-microgrid"
    result = run_scenario(name, tmp_path / "out", overrides=SHORT, progress=False)
    sizing = result.sizing
    dispatch = pd.read_parquet(tmp_path / "out" / "microgrid_dispatch.parquet")
    load_kw = resample(result.facility.power["facility_kw"], "1h")
    # energy balance of the written dispatch against the facility load, by hand [kW]
    supply = dispatch[["pv_kw", "battery_discharge_kw", "generator_kw", "grid_import_kw"]].sum(axis=1)
    use = dispatch[["battery_charge_kw", "grid_export_kw"]].sum(axis=1)
    np.testing.assert_allclose((supply - use).to_numpy(), load_kw.to_numpy(), rtol=1e-6, atol=1e-3)
    assert sizing.status == "optimal"
    # the same problem posed by hand through the microgrid package
    mg, sc = microgrid_pkg, result.scenario.microgrid
    pv = mg.pv_availability(latitude=36.1, longitude=-79.9, tilt=sc.pv.tilt, azimuth=sc.pv.azimuth,
                            index=load_kw.index)
    # the bundled campus names a cost set and a generator technology (issue 17)
    costs = mg.costs(sc.cost_set, year=sc.cost_year, discount_rate=sc.discount_rate,
                     generator=sc.generator_technology, **sc.costs)
    generator = mg.technology(sc.generator_technology).generator(**sc.generator)
    direct = mg.size(load_kw, pv_availability=pv, costs=costs,
                     battery=mg.Battery(**sc.battery), generator=generator,
                     import_limit_kw=sc.import_limit_kw, **sc.options,
                     extra_generators=[mg.priced_generator(sc.cost_set, t, year=sc.cost_year,
                                                           discount_rate=sc.discount_rate)
                                       for t in sc.extra_generator_technologies],
                     generator_name=sc.generator_technology)
    assert sizing.total_annual_cost_usd == pytest.approx(direct.total_annual_cost_usd, rel=1e-9)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["microgrid"]["pv_kwp"] == pytest.approx(direct.pv_kwp, rel=1e-6, abs=1e-6)
