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
