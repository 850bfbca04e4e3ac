"""A new user's bad input: each gets a message with what was received, what is expected and
how to fix it, and nothing is written (found by a command-line audit of ``aiload run/sweep``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.cli import main
from scenarios.loader import ScenarioError, load_scenario

SCENARIO = """\
name = "t"
description = "caf\u00e9 study"
[facility]
preset = "inference-1mw"
utilization = 0.6
start = 2025-01-01T00:00:00Z
end = 2025-01-01T06:00:00Z
freq = "15min"
"""


def _refused(tmp_path: Path, capsys, args: list[str], *, command: str = "run") -> str:
    """Run the command line, check it refused (exit 2, no traceback) and wrote nothing."""
    out = tmp_path / "out"
    assert main([command, *args, "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert not out.exists()
    return err


def test_utf8_file_with_a_byte_order_mark_is_read(tmp_path):
    # Windows editors write EF BB BF first; tomllib alone reads it as an "Invalid statement"
    path = tmp_path / "s.toml"
    path.write_bytes(b"\xef\xbb\xbf" + SCENARIO.encode("utf-8"))
    scenario = load_scenario(path)
    assert scenario.description == "caf\u00e9 study"
    assert scenario.facility.utilization == 0.6


def test_utf16_file_names_the_encoding_and_how_to_save_it(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO, encoding="utf-16")  # Notepad's "Unicode"
    err = _refused(tmp_path, capsys, [str(path)])
    assert "is UTF-16 text" in err
    assert "expected UTF-8. Save it again with the encoding 'UTF-8'" in err


def test_latin1_file_names_the_line_and_byte(tmp_path, capsys):
    # was a UnicodeDecodeError traceback
    path = tmp_path / "s.toml"
    path.write_bytes(SCENARIO.encode("latin-1"))
    err = _refused(tmp_path, capsys, [str(path)])
    assert "line 2: byte 0xe9 is not UTF-8 text; expected a UTF-8 TOML file" in err
    assert "Save it again with the encoding 'UTF-8'" in err


def test_a_folder_given_as_scenario_lists_its_toml_files(tmp_path, capsys):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "a.toml").write_text(SCENARIO)
    err = _refused(tmp_path, capsys, [str(folder)])
    assert f"scenario {str(folder)!r} is a folder, not a scenario file" in err
    assert f"Its .toml files: a.toml; give one of them, e.g. {str(folder / 'a.toml')!r}" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ScenarioError, match="It holds no .toml file. Bundled scenarios: "):
        load_scenario(empty)


MICROGRID = """\
name = "mg"
[facility]
preset = "inference-1mw"
start = 2025-01-01T00:00:00Z
end = 2025-01-02T00:00:00Z
freq = "15min"
[microgrid]
import_limit_kw = 500.0
[microgrid.options]
pv_area_hectare = 2.0
"""


def test_unknown_microgrid_option_fails_at_load_with_the_nearest(tmp_path, capsys, monkeypatch,
                                                                 microgrid_pkg):
    # was a TypeError traceback from microgrid.size() after the whole facility run
    def must_not_run(*args, **kwargs):
        raise AssertionError("the facility model ran with a refused option")

    monkeypatch.setattr("scenarios.studies.facility", must_not_run)
    path = tmp_path / "s.toml"
    path.write_text(MICROGRID)
    err = _refused(tmp_path, capsys, [str(path)])
    assert ("line 10: unknown key 'microgrid.options.pv_area_hectare': not a keyword of "
            "microgrid.size(). Did you mean 'pv_area_ha'? Allowed here: export_limit_kw, ") in err
    with pytest.raises(ScenarioError, match=r"^--set microgrid\.options: key "
                       r"'microgrid\.options\.battery' is set by the \[microgrid\.battery\] "
                       r"table, not in \[microgrid\.options\]; move it there\."):
        load_scenario(path, overrides={"microgrid.options": {"battery": {}}})
    assert load_scenario(path, overrides={"microgrid.options": {"pv_area_ha": 2.0}})


@pytest.mark.parametrize("outages, problem", [
    ([["2025-01-01T16:00:00Z", "2025-01-01T10:00:00Z"]], "ends before it starts"),
    ([["2025-01-01T16:00:00", "2025-01-01T18:00:00"]], "has a date-time without a time zone"),
    (["2025-01-01T16:00:00Z", "2025-01-01T18:00:00Z"], "is not a [start, end] pair"),
])
def test_bad_outage_window_fails_at_load(tmp_path, microgrid_pkg, outages, problem):
    path = tmp_path / "s.toml"
    path.write_text(MICROGRID.replace("pv_area_hectare = 2.0", "pv_area_ha = 2.0"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, overrides={"microgrid.options.outages": outages})
    message = str(info.value)
    assert message.startswith("--set microgrid.options.outages: field 'microgrid.options.outages'")
    assert "outage 0 = " in message and problem in message
    assert ("expected [start, end] with start before end, both with a time zone, e.g. "
            "outages = [[2025-07-15T16:00:00Z, 2025-07-16T00:00:00Z]]") in message
    good = [["2025-01-01T16:00:00Z", "2025-01-01T18:00:00Z"]]
    assert load_scenario(path, overrides={"microgrid.options.outages": good})
