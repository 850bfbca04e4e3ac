"""A full facility specification in [facility] instead of a preset (issue 8)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

import aiload.errors
from scenarios.loader import ScenarioError, apply_overrides, key_lines, load_scenario
from scenarios import studies
from scenarios.runner import run_scenario
from scenarios.schema_facility import (
    FleetSection,
    InferenceSection,
    JobStreamSection,
    OverheadsSection,
)

ONE_DAY = {"facility.end": "2025-03-04T00:00:00Z"}  # the bundled file runs one week

SPEC = """\
name = "t"
[facility]
start = 2025-03-03T00:00:00Z
end = 2025-03-04T00:00:00Z

[facility.fleet]
nodes = 16

[[facility.streams]]
name = "a"
workloads = { "llama2-70b-lora" = 1.0 }
node_counts = { 2 = 1.0 }
utilization = 0.5

[[facility.streams]]
name = "b"
workloads = { "llama2-70b-lora" = 1.0 }
node_counts = { 4 = 1.0 }
rate_per_h = 0.5
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_custom_fleet_equals_the_hand_built_facility_spec(tmp_path, facility_fn):
    from aiload.facility import FacilitySpec, FleetSpec, InferenceSpec, JobStreamSpec, OverheadSpec
    from aiload.profiles import idle_power_w

    result = run_scenario("custom-fleet", tmp_path / "out", overrides=ONE_DAY, progress=False)
    # written by hand from the text of scenarios/bundled/custom-fleet.toml; the omitted idle
    # power is the profile library's measured value
    spec = FacilitySpec(
        fleet=FleetSpec(nodes=64, hardware="4xH100", idle_w=idle_power_w("4xH100"),
                        nameplate_w=3520.0, other_it_base_kw=10.0),
        streams=(JobStreamSpec(name="fine-tuning", workloads={"llama2-70b-lora": 1.0},
                               node_counts={2: 0.5, 4: 0.3, 8: 0.2}, utilization=0.5,
                               daily_amplitude=0.3, weekly_amplitude=0.3, peak_hour=14.0),),
        inference=(InferenceSpec(nodes=8, utilization=0.4, model="llama3-70b"),),
        overheads=OverheadSpec(cooling="pue", pue=1.25),
        backfill=True,
    )
    expected = facility_fn(spec, start=pd.Timestamp("2025-03-03T00:00:00Z"),
                           end=pd.Timestamp("2025-03-04T00:00:00Z"), freq="1min", seed=0,
                           progress=False)
    written = pd.read_parquet(tmp_path / "out" / "facility.parquet")
    assert len(written) == 24 * 60
    pd.testing.assert_frame_equal(written, expected.power, check_freq=False)
    assert result.facility.meta["spec"] == spec

    # the scenario's PUE reaches the model: cooling-only PUE 1.25 -> cooling = 0.25 x IT
    pd.testing.assert_series_equal(written["cooling_kw"], 0.25 * written["it_kw"],
                                   check_names=False, check_freq=False, rtol=1e-12)
    # a stream and a service are both there: 8 serving nodes, jobs of 2-8 nodes
    assert set(expected.jobs["stream"]) == {"fine-tuning"}
    assert written["requests_per_s"].mean() > 0
    # the report lists each stream's keys under the same dotted names --set uses
    assert "facility.streams.0.utilization</td><td class=\"num\">0.5<" in (
        tmp_path / "out" / "report.html").read_text()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["inputs"]["facility"]["preset"] is None
    assert summary["inputs"]["facility"]["fleet"]["nodes"] == 64
    assert summary["inputs"]["facility"]["streams"][0]["node_counts"] == {"2": 0.5, "4": 0.3,
                                                                         "8": 0.2}


def test_preset_and_spec_together_is_an_error_at_the_facility_line(tmp_path):
    text = SPEC.replace("[facility]\n", '[facility]\npreset = "colocation-10mw"\n')
    with pytest.raises(ScenarioError, match=r"s\.toml.*\n  line 2: in table \[facility\]: give "
                       r"either preset = 'colocation-10mw' or the full spec \(fleet, streams\), "
                       r"not both"):
        load_scenario(write(tmp_path, text))


def test_neither_preset_nor_spec_says_how_to_give_one(tmp_path):
    text = 'name = "t"\n[facility]\nstart = 2025-03-03T00:00:00Z\nend = 2025-03-04T00:00:00Z\n'
    with pytest.raises(ScenarioError, match=r"line 2: in table \[facility\]: no facility given: "
                       r"set preset = 'colocation-10mw'.*\[facility\.fleet\] table"):
        load_scenario(write(tmp_path, text))


def test_preset_keys_with_a_full_spec_are_refused(tmp_path):
    text = SPEC.replace("end = 2025-03-04T00:00:00Z\n",
                        "end = 2025-03-04T00:00:00Z\nutilization = 0.4\n")
    with pytest.raises(ScenarioError, match=r"utilization: for a preset only; with a full spec "
                       r"set utilization in each \[\[facility\.streams\]\]"):
        load_scenario(write(tmp_path, text))


def test_typo_in_the_second_stream_names_its_line_and_the_nearest_key(tmp_path):
    text = SPEC.replace("rate_per_h = 0.5", "rate_per_hour = 0.5")
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text))
    assert ("s.toml': 1 problem:\n  line 19: unknown key 'facility.streams.1.rate_per_hour'. "
            "Did you mean 'rate_per_h'?") in str(info.value)


def test_stream_without_a_rate_is_reported_at_its_table_header(tmp_path):
    text = SPEC.replace("rate_per_h = 0.5\n", "")
    with pytest.raises(ScenarioError, match=r"\n  line 15: in table \[facility\.streams\.1\]: "
                       r"stream 'b': give exactly one of utilization, rate_per_h or arrivals, "
                       r"got none\.$"):
        load_scenario(write(tmp_path, text))


def test_bad_value_in_a_sub_table_is_located(tmp_path):
    text = SPEC + "\n[facility.overheads]\npue = 0.9\n"
    with pytest.raises(ScenarioError, match=r"line 22: field 'facility\.overheads\.pue' = 0\.9: "
                       r"Input should be greater than or equal to 1"):
        load_scenario(write(tmp_path, text))
    text = SPEC.replace("[facility.fleet]", "[facility.fleets]")
    with pytest.raises(ScenarioError, match=r"line 6: unknown key 'facility\.fleets'\. "
                       r"Did you mean 'fleet'\?"):
        load_scenario(write(tmp_path, text))


def test_facility_spec_cross_checks_run_at_load_time(tmp_path):
    # 16 nodes, all serving: nothing left for the two job streams (FacilitySpec's own check)
    text = SPEC + "\n[[facility.inference]]\nnodes = 16\nutilization = 0.5\n"
    with pytest.raises(ScenarioError, match=r"line 2: in table \[facility\]: FacilitySpec: "
                       r"inference pools take 16 nodes but the fleet has 16"):
        load_scenario(write(tmp_path, text))


def test_unknown_workload_fails_before_the_simulation(tmp_path, facility_fn):
    text = SPEC.replace('"llama2-70b-lora" = 1.0 }\nnode_counts = { 4',
                        '"llama2-70b-lorra" = 1.0 }\nnode_counts = { 4')
    with pytest.raises(aiload.errors.InputError,
                       match=r"facility\.streams\[1\] \('b'\)\.workloads: no profile of "
                       r"'llama2-70b-lorra' on '4xH100'.*Did you mean 'llama2-70b-lora'\?"):
        run_scenario(write(tmp_path, text), tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_unknown_hardware_names_the_known_node_types(tmp_path, facility_fn):
    text = SPEC.replace("nodes = 16\n", 'nodes = 16\nhardware = "4xH10"\n', 1)
    with pytest.raises(aiload.errors.InputError,
                       match=r"facility\.fleet\.hardware = '4xH10': the profile library has no "
                       r"workloads for this node type\. Did you mean '4xH100'\? Known node types: "
                       r"4xH100, 8xH100-SXM, 8xH200-SXM\."):
        run_scenario(write(tmp_path, text), tmp_path / "out", progress=False)


@pytest.mark.parametrize("arrivals", [
    "[0, 5400.5, 39600]",
    # 12:00 at +01:00 is 11:00 UTC, 39,600 s after the start
    "[2025-03-03T00:00:00Z, 2025-03-03T01:30:00.5Z, 2025-03-03T12:00:00+01:00]",
])
def test_replayed_arrivals_in_seconds_or_as_date_times(tmp_path, facility_fn, arrivals):
    text = SPEC.replace("rate_per_h = 0.5", f"arrivals = {arrivals}")
    sc = load_scenario(write(tmp_path, text), overrides={"facility.end": "2025-03-03T18:00:00Z"})
    load = studies.run_facility(sc.facility, progress=False)
    replayed = load.jobs[load.jobs["stream"] == "b"]
    start = pd.Timestamp("2025-03-03T00:00:00Z")
    assert list(replayed["arrival"]) == [start, start + pd.Timedelta(seconds=5400.5),
                                         start + pd.Timedelta(hours=11)]
    assert set(replayed["nodes"]) == {4}


def test_mixed_or_naive_arrivals_are_refused(tmp_path):
    mixed = SPEC.replace("rate_per_h = 0.5", "arrivals = [0, 2025-03-03T12:00:00Z]")
    with pytest.raises(ScenarioError, match=r"line 15: in table \[facility\.streams\.1\]: stream "
                       r"'b': arrivals mix seconds and date-times"):
        load_scenario(write(tmp_path, mixed))
    naive = SPEC.replace("rate_per_h = 0.5", "arrivals = [2025-03-03T12:00:00]")
    with pytest.raises(ScenarioError, match=r"arrivals \['2025-03-03T12:00:00'\] have no time "
                       r"zone; write them with an offset"):
        load_scenario(write(tmp_path, naive))


def test_key_lines_number_arrays_of_tables():
    lines = key_lines(SPEC + "[facility.streams.workloads]\nx = 1\n")
    assert lines[("facility", "streams")] == 9
    assert lines[("facility", "streams", "0", "utilization")] == 13
    assert lines[("facility", "streams", "1")] == 15
    assert lines[("facility", "streams", "1", "rate_per_h")] == 19
    # a sub-table after the second [[facility.streams]] belongs to that element
    assert lines[("facility", "streams", "1", "workloads", "x")] == 21


def test_set_reaches_a_table_of_an_array(tmp_path):
    raw = {"facility": {"streams": [{"utilization": 0.5}, {"rate_per_h": 1.0}]}}
    out = apply_overrides(raw, {"facility.streams.1.rate_per_h": 2.0})
    assert out["facility"]["streams"][1]["rate_per_h"] == 2.0
    assert raw["facility"]["streams"][1]["rate_per_h"] == 1.0  # input unchanged
    with pytest.raises(ScenarioError, match=r"'2' must be the 0-based number of an existing "
                       r"table of that array \(0\.\.1\)"):
        apply_overrides(raw, {"facility.streams.2.utilization": 0.3})
    sc = load_scenario("custom-fleet", overrides={"facility.streams.0.utilization": 0.7})
    assert sc.facility.streams[0].utilization == 0.7


@pytest.mark.parametrize("section, spec_name", [
    (FleetSection, "FleetSpec"), (JobStreamSection, "JobStreamSpec"),
    (InferenceSection, "InferenceSpec"), (OverheadsSection, "OverheadSpec"),
])
def test_section_keys_and_defaults_are_those_of_the_dataclass(section, spec_name):
    import aiload.facility.spec as spec_module

    spec = getattr(spec_module, spec_name)
    fields = {f.name: f for f in dataclasses.fields(spec)}
    assert set(section.model_fields) == set(fields) - {"catalogue"}
    for name, field in section.model_fields.items():
        if name == "idle_w":  # None: looked up in the profile library (tested end to end)
            continue
        default = fields[name].default
        if default is dataclasses.MISSING:
            assert field.is_required(), name
        else:
            assert field.default == default, name


def test_sweep_over_a_stream_utilisation(tmp_path, facility_fn):
    from scenarios.sweep import run_sweep

    over = {"facility.end": "2025-03-03T06:00:00Z"}
    res = run_sweep("custom-fleet", tmp_path / "sw", overrides=over, replicates=1, workers=0,
                    sets={"facility.streams.0.utilization": [0.3, 0.7]}, progress=False)
    assert [c.facility.streams[0].utilization for c in res.cases] == [0.3, 0.7]
    assert set(res.comparison["facility.streams.0.utilization"]) == {"0.3", "0.7"}
    # each case is the facility model run with that stream utilisation
    for case in res.cases:
        expected = facility_fn(case.facility.to_spec(), start=pd.Timestamp(case.facility.start),
                               end=pd.Timestamp(case.facility.end), freq="1min", seed=0,
                               progress=False)
        got = pd.read_parquet(tmp_path / "sw" / "cases" / case.case_id / "rep-0000.parquet")
        pd.testing.assert_series_equal(got["facility_kw"], expected.power["facility_kw"],
                                       check_freq=False)
