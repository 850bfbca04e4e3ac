"""A scenario file reports all its problems at once (issue 26): the file checks after
validation (weather and network files, solver options) and the stage checks before any
computation (preset parameters, study steps, cost sets)."""

from __future__ import annotations

import pytest

from aiload.errors import InputError
from scenarios.loader import ScenarioError, load_scenario

FILE = """name = "bad"

[facility]
preset = "inference-1mw"
start = 2025-06-01T00:00:00Z
end = 2025-06-02T00:00:00Z
freq = "1min"

[site]
weather = "nope.csv"

[grid]
network = "missing.json"
bus = 5
"""


def test_missing_files_are_all_named_with_their_lines(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(FILE, encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    text = str(err.value)
    assert text.startswith(f"scenario file {str(path)!r}: 2 problems:\n")
    assert "\n  line 10: field 'site.weather' = 'nope.csv': no such file" in text
    assert "\n  line 13: field 'grid.network' = 'missing.json': no such file" in text


def test_one_problem_keeps_its_own_message(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(FILE.replace('weather = "nope.csv"', 'timezone = "UTC"'), encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"scenario file {str(path)!r}:\n  line 13: field "
                                     "'grid.network' = 'missing.json': no such file")


def test_stage_checks_are_all_made_before_computing(tmp_path):
    from scenarios.runner import run_scenario

    path = tmp_path / "bad.toml"
    path.write_text(FILE.replace('weather = "nope.csv"', 'timezone = "UTC"')
                    .replace('"missing.json"', '"cigre_mv"')
                    .replace('preset = "inference-1mw"',
                             'preset = "inference-1mw"\noverrides = { nodez = 3 }')
                    + 'freq = "7min"\n\n[microgrid]\ncost_set = "nrel-atb-2024"\nfreq = "1h"\n',
                    encoding="utf-8")
    with pytest.raises(InputError) as err:
        run_scenario(path, tmp_path / "out", progress=False)
    lines = str(err.value).splitlines()
    assert lines[0] == f"3 problems in the scenario {str(path)!r}:"
    assert lines[1].startswith("  [facility] preset = 'inference-1mw' with {'nodez': 3}: ")
    assert "Did you mean 'nodes'?" in lines[1]
    assert lines[2].startswith("  grid.freq = '7min' does not divide the facility horizon")
    assert lines[3].startswith("  microgrid.cost_set = 'nrel-atb-2024': unknown cost set")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
