"""The `aiload` command line: a light --help, plain progress lines in logs, --set errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scenarios.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "scipy", "matplotlib", "pyarrow", "pydantic", "pandapower", "pyomo", "dask")


def _help_lines(parser):
    sub = next(a for a in parser._actions if a.dest == "command")
    return {a.dest: a.help for a in sub._choices_actions}


def test_top_level_help_imports_no_heavy_package():
    code = textwrap.dedent(f"""
        import sys
        from scenarios.cli import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        print("HEAVY", [m for m in {HEAVY!r} if m in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=60)
    assert "usage: aiload" in out.stdout
    assert "HEAVY []" in out.stdout, out.stdout[-500:]


def test_listed_help_lines_are_the_commands_own():
    full, light = build_parser(full=True), build_parser(full=False)
    assert _help_lines(light) == _help_lines(full)
    assert list(_help_lines(light)) == list(_help_lines(full))  # same order
    assert set(COMMANDS) == set(_help_lines(full))


def test_a_command_gets_its_full_parser(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--overwrite" in capsys.readouterr().out


def test_stage_lines_without_a_terminal(tmp_path):
    # stderr is a pipe here, as in a log file: one line per stage, no carriage returns
    out = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "run", "inference-1mw", "-o", str(tmp_path / "o"),
         "--set", "facility.end=2025-01-01T06:00:00Z", "--set", "outputs.report=false"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[:3] == ["aiload run: facility ...", "aiload run: metrics ...",
                         "aiload run: writing outputs ..."]


@pytest.mark.parametrize("args, message", [
    (["--set", "facility.utilization=2"],
     "  --set facility.utilization=2: field 'facility.utilization' = 2: Input should be less than "
     "or equal to 1"),
    (["--set", "facility.utilisation=0.3"],
     "  --set facility.utilisation=0.3: unknown key 'facility.utilisation'. Did you mean "
     "'utilization'?"),
    (["--set", "grid.bus=3"],
     "  --set grid.bus: field 'grid.network' is required but missing: --set made a [grid] table "
     "the file does not have; add --set grid.network=VALUE too."),
    (["--set", "facility.streams.0.utilization=0.5"],
     "--set facility.streams.0.utilization: the scenario has no [[facility.streams]] tables"),
])
def test_set_errors_name_the_override_not_a_line_of_the_file(capsys, args, message):
    assert main(["run", "inference-1mw", "-q", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert " line " not in err


def test_grid_studies_report_each_study_in_a_fixed_order():
    import types

    import pandas as pd

    from scenarios import studies
    from scenarios.schema import GridSection

    calls = []
    fake = types.SimpleNamespace(**{
        name: (lambda *a, _n=name, **k: calls.append(_n) or _n)
        for name in ("timeseries", "hosting_capacity", "contingency", "load_loss")})
    section = GridSection(network="cigre_mv", bus=5, studies=["load_loss", "timeseries"],
                          contingency_hours=24)
    plan = studies.GridPlan(section=section, net=None, limits=None, module=fake)
    idx = pd.date_range("2025-01-01", periods=48, freq="1h", tz="UTC")
    lines = []
    out = studies.run_grid(plan, pd.Series(1000.0, index=idx), stage=lines.append)
    assert lines == ["time-series power flow, 48 steps", "load loss"]
    assert calls == ["timeseries", "load_loss"]
    assert list(out) == ["load_mw", "timeseries", "load_loss"]
