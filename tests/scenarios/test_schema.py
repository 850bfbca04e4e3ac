"""Scenario files: validation messages name the file, field, line, value and a suggestion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.loader import (
    ScenarioError,
    apply_overrides,
    bundled_names,
    key_lines,
    load_scenario,
    parse_set,
)

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
name = "t"
[facility]
preset = "colocation-10mw"
utilization = 0.4
start = 2024-01-01T00:00:00Z
end = 2024-01-02T00:00:00Z
freq = "1min"

[grid]
network = "cigre_mv"
bus = 5
[grid.limits]
vm_min_pu = 0.9
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_good_file_loads_with_defaults(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD))
    assert sc.facility.utilization == 0.4
    assert sc.grid.bus == 5 and sc.grid.limits.vm_min_pu == 0.9
    assert sc.grid.limits.vm_max_pu == 1.05  # default
    assert sc.microgrid is None
    assert sc.facility.start.utcoffset().total_seconds() == 0


def test_unknown_key_names_file_line_and_nearest(tmp_path):
    path = write(tmp_path, GOOD.replace("utilization = 0.4", "utilisation = 0.4"))
    with pytest.raises(ScenarioError, match=r"s\.toml.*\n.*line 4: unknown key 'facility\.utilisation'\. "
                       r"Did you mean 'utilization'\?"):
        load_scenario(path)


def test_nested_unknown_key_and_line(tmp_path):
    path = write(tmp_path, GOOD.replace("vm_min_pu = 0.9", "vm_mn_pu = 0.9"))
    with pytest.raises(ScenarioError, match=r"line 13: unknown key 'grid\.limits\.vm_mn_pu'\. "
                       r"Did you mean 'vm_min_pu'\?"):
        load_scenario(path)


def test_out_of_range_value_names_field_value_and_range(tmp_path):
    path = write(tmp_path, GOOD.replace("utilization = 0.4", "utilization = 1.5"))
    with pytest.raises(ScenarioError, match=r"line 4: field 'facility\.utilization' = 1\.5: "
                       r"Input should be less than or equal to 1"):
        load_scenario(path)


def test_wrong_type(tmp_path):
    path = write(tmp_path, GOOD.replace("bus = 5", 'bus = "five"'))
    with pytest.raises(ScenarioError, match=r"line 11: field 'grid\.bus' = 'five': Input should be a valid integer"):
        load_scenario(path)


def test_naive_time_and_bad_freq(tmp_path):
    text = GOOD.replace("2024-01-01T00:00:00Z", "2024-01-01T00:00:00").replace('"1min"', '"1mn"')
    with pytest.raises(ScenarioError, match=r"(?s)2 problems.*line 5: field 'facility\.start'.*"
                       r"no time zone.*line 7: field 'facility\.freq' = '1mn'"):
        load_scenario(write(tmp_path, text))


def test_missing_required_field(tmp_path):
    with pytest.raises(ScenarioError, match=r"field 'grid\.bus' is required but missing"):
        load_scenario(write(tmp_path, GOOD.replace("bus = 5\n", "")))


def test_end_before_start(tmp_path):
    text = GOOD.replace("end = 2024-01-02T00:00:00Z", "end = 2023-12-31T00:00:00Z")
    with pytest.raises(ScenarioError, match=r"must be after start"):
        load_scenario(write(tmp_path, text))


def test_missing_weather_file_fails_at_load(tmp_path):
    path = write(tmp_path, GOOD + '[site]\nweather = "tmy/none.csv"\n')
    with pytest.raises(ScenarioError, match=r"line 15: field 'site\.weather' = 'tmy/none\.csv': no such file"):
        load_scenario(path)


def test_relative_weather_is_resolved_against_the_file(tmp_path):
    (tmp_path / "w.csv").write_text("x")
    sc = load_scenario(write(tmp_path, GOOD + '[site]\nweather = "w.csv"\n'))
    assert Path(sc.site.weather) == (tmp_path / "w.csv").resolve()


def test_bad_toml_syntax(tmp_path):
    with pytest.raises(ScenarioError, match=r"s\.toml.*not valid TOML"):
        load_scenario(write(tmp_path, "name = \n"))


def test_unknown_bundled_name_suggests():
    with pytest.raises(ScenarioError, match=r"Did you mean 'colocation-10mw'\?"):
        load_scenario("colocation-10m")


def test_overrides_are_validated_and_input_untouched(tmp_path):
    raw = {"facility": {"utilization": 0.4}}
    out = apply_overrides(raw, {"facility.utilization": 0.6, "grid.bus": 3})
    assert raw == {"facility": {"utilization": 0.4}}
    assert out == {"facility": {"utilization": 0.6}, "grid": {"bus": 3}}
    with pytest.raises(ScenarioError, match=r"facility\.utilization"):
        load_scenario(write(tmp_path, GOOD), overrides={"facility.utilization": -1})


def test_parse_set():
    assert parse_set("facility.utilization=0.2,0.4") == ("facility.utilization", [0.2, 0.4])
    assert parse_set("grid.network=cigre_mv") == ("grid.network", ["cigre_mv"])
    assert parse_set('grid.studies=["timeseries", "load_loss"]') == (
        "grid.studies", [["timeseries", "load_loss"]])
    with pytest.raises(ScenarioError, match=r"not a valid TOML array"):
        parse_set("grid.studies=[timeseries")
    with pytest.raises(ScenarioError, match=r"expected FIELD=VALUE"):
        parse_set("facility.utilization")


def test_key_lines_scan():
    lines = key_lines(GOOD)
    assert lines[("facility", "preset")] == 3
    assert lines[("grid",)] == 9
    assert lines[("grid", "limits", "vm_min_pu")] == 13


def test_every_bundled_scenario_validates():
    names = bundled_names()
    assert {"colocation-10mw", "inference-1mw", "campus-100mw-interconnection",
            "campus-100mw-microgrid"} <= set(names)
    for name in names:
        load_scenario(name)


def test_committed_schema_reference_is_up_to_date():
    out = subprocess.run([sys.executable, "-m", "scenarios.schema_doc"], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    committed = (ROOT / "docs" / "scenario-schema.md").read_text(encoding="utf-8")
    assert out.stdout == committed, "regenerate: python -m scenarios.schema_doc > docs/scenario-schema.md"
