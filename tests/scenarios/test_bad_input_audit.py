"""A new user's bad input: each gets a message with what was received, what is expected and
how to fix it, and nothing is written (found by a command-line audit of ``aiload run/sweep``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.cli import main
from scenarios.loader import ScenarioError, bundled_names, load_scenario

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


def _forbid(monkeypatch, target: str) -> None:
    """Make ``target`` fail the test if it runs: the input must be refused before it."""

    def must_not_run(*args, **kwargs):
        raise AssertionError(f"{target} ran although the input was refused")

    monkeypatch.setattr(target, must_not_run)


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
    _forbid(monkeypatch, "scenarios.studies.facility")
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


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


def test_facility_steps_of_the_schema_are_the_facility_models():
    from aiload.facility.model import MAX_FREQ_S, MIN_FREQ_S
    from scenarios.schema import FACILITY_FREQ_RANGE_S

    assert FACILITY_FREQ_RANGE_S == (MIN_FREQ_S, MAX_FREQ_S)


@pytest.mark.parametrize("freq, message", [
    ("2h", "field 'facility.freq' = '2h': the facility model runs at steps of 100ms to 1h, got "
     "'2h' (7200 s); set freq = '1h' or finer (for coarser grid or sizing steps set grid.freq"),
    ("7s", "field 'facility.freq' = '7s': '7s' neither divides one minute nor is a whole number "
     "of minutes; expected e.g. '100ms', '1s', '15s', '30s', '1min', '15min' or '1h'."),
])
def test_facility_freq_the_model_cannot_run_fails_at_load(tmp_path, freq, message):
    # was refused by aiload.facility at run time, after a sweep had written its other cases
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path), overrides={"facility.freq": freq})
    assert f"  --set facility.freq={freq}: {message}" in str(info.value)


def test_horizon_off_the_freq_grid_names_both_nearest_ends(tmp_path):
    # 6 h is not a whole number of 7-min steps: 51 steps end at 05:57, 52 at 06:04
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path), overrides={"facility.freq": "7min"})
    assert "line" not in str(info.value).splitlines()[1]  # the freq came from --set, not a line
    assert ("  --set facility.freq=7min: in table [facility]: the horizon start = "
            "2025-01-01T00:00:00Z .. end = 2025-01-01T06:00:00Z (6 h) is not a whole number of "
            "freq = '7min' steps; set end = 2025-01-01T05:57:00Z or 2025-01-01T06:04:00Z, or a "
            "freq that divides the horizon.") in str(info.value)


def test_a_check_across_a_table_names_every_set_inside_it(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path), overrides={"facility.end": "2025-01-01T06:07:00Z",
                                                      "facility.freq": "15min"})
    assert ("  --set facility.end=2025-01-01T06:07:00Z, --set facility.freq=15min: in table "
            "[facility]: the horizon") in str(info.value)
    assert "set end = 2025-01-01T06:00:00Z or 2025-01-01T06:15:00Z" in str(info.value)


def test_a_whole_table_set_is_named_not_a_key_set_inside_it(tmp_path):
    # `--set facility=3` was reported as coming from `--set facility.end=...`
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path), overrides={"facility.end": "2025-01-02T00:00:00Z",
                                                      "facility": 3})
    assert ("  --set facility=3: field 'facility' = 3: Input should be a table; write a table: "
            "--set facility.KEY=VALUE, or --set 'facility={ key = value }'. facility: the "
            "facility model run") in str(info.value)


def test_deprecated_freq_alias_runs_in_todays_spelling(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # pandas warns at every use of 'T'
        scenario = load_scenario(_scenario(tmp_path), overrides={"facility.freq": "15T"})
    assert scenario.facility.freq == "15min"
    assert load_scenario(_scenario(tmp_path), overrides={"facility.freq": "1H"}).facility.freq \
        == "1h"


@pytest.mark.parametrize("text, message", [
    ('[sweep]\nvalues = [0.2, 0.4]\n',
     "line 10: field 'sweep.values' = [0.2, 0.4]: Input should be a table; write a table: a "
     "[section] header with key = value lines, or { key = value, ... } on one line. "
     "sweep.values: dotted field -> list of values"),
    ('[grid]\nnetwork = "cigre_mv"\nbus = 5\nstudies = "timeseries"\n',
     "line 12: field 'grid.studies' = 'timeseries': Input should be a valid list; write an "
     "array in brackets, e.g. [0.2, 0.4] or [\"timeseries\"]. grid.studies: which studies to "
     "run"),
    ('[outputs]\ndpi = "high"\n',
     "line 10: field 'outputs.dpi' = 'high': Input should be a valid integer, unable to parse "
     "string as an integer; write a whole number without quotes, e.g. 3. outputs.dpi: "
     "resolution of the report's figures [dpi]."),
])
def test_wrong_type_says_how_the_value_is_written_and_what_it_means(tmp_path, text, message):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert message in str(info.value)


def test_wrong_type_from_set_is_spelled_for_the_command_line(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path), overrides={"facility.utilization": "abc"})
    assert ("  --set facility.utilization=abc: field 'facility.utilization' = 'abc': Input should "
            "be a valid number, unable to parse string as a number; write a number without "
            "quotes, e.g. 0.5. facility.utilization: target utilisation of the preset's fleet, "
            "(0, 1] [-]") in str(info.value)


def test_naive_time_is_shown_as_written_and_missing_keys_say_what_they_are(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.replace("start = 2025-01-01T00:00:00Z", "start = 2025-01-01T00:00:00"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    # was datetime.datetime(2025, 1, 1, 0, 0)
    assert "line 6: field 'facility.start' = 2025-01-01T00:00:00: start has no time zone" in str(
        info.value)
    path.write_text("")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert ("field 'name' is required but missing; add it to the file. name: short name of the "
            "scenario.") in str(info.value)


@pytest.mark.parametrize("args, message", [
    (["--replicates", "0"], "replicates = 0 (--replicates): expected a whole number >= 1 of "
     "replicates per case, e.g. --replicates 20; leave it out to use the file's [sweep] "
     "replicates."),
    (["--workers", "-1"], "workers = -1 (--workers): expected 0 (the cases one after another in "
     "this process) or a number of worker processes >= 1, e.g. --workers 4."),
    (["--set", "facility.utilization=0.2", "--set", "facility.utilization=0.4"],
     "--set facility.utilization is given twice (0.2 and 0.4); give it once: --set "
     "facility.utilization=VALUE, or for `aiload sweep` all values after one = (--set "
     "facility.utilization=V1,V2,...)."),
    # one value of the list the facility model cannot run: the first cases were computed and
    # written before the run of this one refused it
    (["--set", "facility.freq=15min,7s"], "--set facility.freq=7s: field 'facility.freq' = '7s': "
     "'7s' neither divides one minute"),
])
def test_bad_sweep_arguments_are_refused_before_anything_is_written(tmp_path, capsys,
                                                                     monkeypatch, args, message):
    _forbid(monkeypatch, "scenarios.sweep.run_task")
    err = _refused(tmp_path, capsys, [str(_scenario(tmp_path)), "--workers", "0", *args],
                   command="sweep")
    assert message in err


def test_a_repeated_set_of_run_is_refused(tmp_path, capsys):
    err = _refused(tmp_path, capsys, [str(_scenario(tmp_path)), "--set", "facility.seed=1",
                                      "--set", "facility.seed=2"])
    assert "--set facility.seed is given twice (1 and 2); give it once" in err


PRICED = {"microgrid.cost_set": "atb2024-moderate", "microgrid.generator_technology": "gas_engine"}


@pytest.mark.parametrize("overrides, message", [
    ({**PRICED, "microgrid.battery.charge_eficiency": 0.9},
     "microgrid.battery: unknown key 'charge_eficiency' (microgrid.Battery has no such field). "
     "Did you mean 'charge_efficiency'? Allowed in [microgrid.battery]: charge_efficiency, "),
    ({**PRICED, "microgrid.carbon.price": 5.0},
     "microgrid.carbon: unknown key 'price' (microgrid.Carbon has no such field). Did you mean "
     "'price_usd_per_t'? Allowed in [microgrid.carbon]: grid_kg_per_kwh, price_usd_per_t, "
     "cap_t_per_year."),
    # without a cost set: was "Costs.__init__() missing 5 required positional arguments"
    ({}, "[microgrid.costs] lacks pv_usd_per_kwp_year, battery_usd_per_kwh_year, "
     "battery_usd_per_kw_year, generator_usd_per_kw_year, import_usd_per_kwh, which "
     "microgrid.Costs needs; add them to [microgrid.costs], or set cost_set = "),
    # was reported as a problem of microgrid.cost_set (or hidden behind the costs)
    ({"microgrid.generator_technology": "gas-engine"},
     "microgrid.generator_technology = 'gas-engine': unknown generator technology 'gas-engine'"),
    ({**PRICED, "microgrid.costs.demand_charge": 5.0},
     "microgrid.costs: unknown key 'demand_charge' (microgrid.Costs has no such field). Did you "
     "mean 'demand_charge_usd_per_kw_month'?"),
    ({**PRICED, "microgrid.generator.max_powr_kw": 5.0},
     "microgrid.generator: unknown key 'max_powr_kw' (microgrid.Generator has no such field). "
     "Did you mean 'max_power_kw'?"),
])
def test_microgrid_tables_name_the_bad_key_and_the_allowed_ones(tmp_path, capsys, monkeypatch,
                                                                microgrid_pkg, overrides, message):
    _forbid(monkeypatch, "scenarios.studies.facility")
    path = tmp_path / "s.toml"
    path.write_text(MICROGRID.replace("[microgrid.options]\npv_area_hectare = 2.0\n", ""))
    sets = [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]
    err = _refused(tmp_path, capsys, [str(path), *sets])
    assert message in err


@pytest.mark.parametrize("sets, message", [
    (["grid.bus=500"], "grid.bus = 500: network 'cigre_mv' has no such bus; its 15 buses are "
     "numbered 0 to 14 (pandapower indices, not MATPOWER bus numbers: case118's bus 16 is "
     "index 15). Set grid.bus to one of them."),
    (["grid.network=cigre-mv"], "grid.network = 'cigre-mv': unknown network 'cigre-mv'. Did you "
     "mean 'cigre_mv'? Available names: "),
])
def test_grid_bus_and_network_are_named_with_what_exists(tmp_path, capsys, monkeypatch, grid_pkg,
                                                         sets, message):
    _forbid(monkeypatch, "scenarios.studies.facility")
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + '[grid]\nnetwork = "cigre_mv"\nbus = 5\nstudies = ["timeseries"]\n')
    err = _refused(tmp_path, capsys, [str(path), *(a for s in sets for a in ("--set", s))])
    assert message in err


FLEET = """\
name = "fleet"
[facility]
start = 2025-03-03T00:00:00Z
end = 2025-03-03T06:00:00Z
freq = "15min"
[facility.fleet]
nodes = 16
hardware = "4xH100"
[[facility.streams]]
name = "ft"
workloads = { "llama2-70b-lora" = 1.0 }
node_counts = { 2 = 1.0 }
utilization = 0.5
[[facility.inference]]
nodes = 4
utilization = 0.4
"""


def test_a_served_model_without_a_curve_is_refused_before_the_run(tmp_path, capsys, monkeypatch,
                                                                  facility_fn):
    # 'llama3-7b' ran with the power curve measured on llama3-70b, labelled llama3-7b
    _forbid(monkeypatch, "scenarios.studies.facility")
    path = tmp_path / "s.toml"
    path.write_text(FLEET)
    err = _refused(tmp_path, capsys, [str(path), "--set", "facility.inference.0.model=llama3-7b"])
    assert ("facility.inference[0].model = 'llama3-7b': the power curve on '4xH100' is measured "
            "with llama3-70b, not 'llama3-7b'. Did you mean 'llama3-70b'? Set model to it") in err
    err = _refused(tmp_path, capsys, [str(path), "--set",
                                      "facility.inference.0.curve_hardware=8xH100-SXM"])
    assert "facility.inference[0] (curve hardware '8xH100-SXM'): " in err
    assert ("In the scenario, set curve_hardware in this [[facility.inference]] table to "
            "hardware that has a curve") in err


def test_single_and_double_brackets_mixed_up_say_which_to_write(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(FLEET.replace("[[facility.streams]]", "[facility.streams]"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert ("line 9: field 'facility.streams' = {'name': 'ft', 'workloads': {'llama2-70b-lora': "
            "1.0}, 'node_counts': {'2': 1.0}, 'utilization': 0.5}: Input should be a valid list; write each table under its own "
            "[[facility.streams]] header (double brackets), not [facility.streams].") in str(
        info.value)
    path.write_text(FLEET.replace("[facility.fleet]", "[[facility.fleet]]"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert ("line 6: field 'facility.fleet' = [{'nodes': 16, 'hardware': '4xH100'}]: Input "
            "should be a table; write one [facility.fleet] header (single brackets), not "
            "[[facility.fleet]].") in str(info.value)
    # a cross-check message that ends in a full stop gets no second one
    path.write_text(FLEET.replace("nodes = 4\n", "nodes = 40\n"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "inference pools take 40 nodes but the fleet has 16" in str(info.value)
    assert ".." not in str(info.value)


@pytest.mark.parametrize("text, message", [
    # `aiload run` said "takes one value, got 2" for a trailing comma
    ("facility.utilization=0.2,", "--set 'facility.utilization=0.2,': an empty value between "
     "commas (or after the last); expected FIELD=VALUE or FIELD=V1,V2,... with a value after "
     "every comma, e.g. --set facility.utilization=0.2"),
    ("facility.utilization=0.2,,0.4", "e.g. --set facility.utilization=0.2,0.4"),
    # was "unknown key 'facility.'"
    ("facility..utilization=0.5", "--set 'facility..utilization=0.5': the field "
     "'facility..utilization' has an empty part between dots; expected names joined by single "
     "dots"),
    # text in an array without quotes: was only "is not a valid TOML array or inline table"
    ("grid.studies=[timeseries]", "--set 'grid.studies=[timeseries]': '[timeseries]' is not a "
     "valid TOML array or inline table (Invalid value (at line 1, column 6)); close every "
     "bracket and brace and write text in double quotes, the whole --set in single quotes for "
     "the shell, e.g. --set 'grid.studies=[\"timeseries\", \"load_loss\"]'"),
])
def test_bad_set_syntax_says_how_to_write_it(tmp_path, capsys, text, message):
    err = _refused(tmp_path, capsys, [str(_scenario(tmp_path)), "--set", text])
    assert message in err


def test_output_on_a_file_system_that_refuses_writes_fails_before_the_run(tmp_path, capsys,
                                                                         monkeypatch):
    # os.access says yes to root on a read-only mount or /sys; the mkdir at the end of the
    # run raised PermissionError (a traceback after the whole computation)
    import errno
    import pathlib

    locked = tmp_path / "locked"
    locked.mkdir()
    real_mkdir = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.parent == locked:
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    _forbid(monkeypatch, "scenarios.studies.facility")
    for command in ("run", "sweep"):
        assert main([command, str(_scenario(tmp_path)), "-o", str(locked / "out"), "-q",
                     *(["--workers", "0"] if command == "sweep" else [])]) == 2
        err = capsys.readouterr().err
        assert (f"output folder {str(locked / 'out')!r}: cannot write in {str(locked)!r} "
                "(Read-only file system); choose a folder you can write to.") in err
        assert list(locked.iterdir()) == []


@pytest.mark.parametrize("old, new, message", [
    ('freq = "15min"', "freq = 15min", "not valid TOML: Expected newline or end of document after "
     "a statement (at line 8, column 10). Most often a text value without its double quotes: "
     "write freq = \"1min\""),
    ("utilization = 0.6", "utilization = 0.6\nutilization = 0.5", "not valid TOML: Cannot "
     "overwrite a value (at line 6, column 18). A key or a [table] is written twice there; keep "
     "one of them"),
])
def test_toml_syntax_errors_name_the_likely_fix(tmp_path, capsys, old, new, message):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.replace(old, new))
    err = _refused(tmp_path, capsys, [str(path)])
    assert message in err


@pytest.mark.parametrize("values, message", [
    # no value: no case; the sweep wrote its plan, then failed with an IndexError traceback
    ("[]", "[sweep] values 'facility.utilization' = []: expected a list of one or more values, "
     "e.g. facility.utilization = [0.2, 0.4] in [sweep] values or --set "
     "facility.utilization=0.2,0.4"),
    # a bad value of the file's [sweep] table was reported as a --set
    ("[0.4, 1.4]", "  [sweep] values facility.utilization = 1.4: field 'facility.utilization' = "
     "1.4: Input should be less than or equal to 1."),
])
def test_bad_sweep_values_of_the_file_are_named_as_such(tmp_path, capsys, values, message):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + f'[sweep]\nvalues = {{ "facility.utilization" = {values} }}\n')
    err = _refused(tmp_path, capsys, [str(path), "--workers", "0"], command="sweep")
    assert message in err
    assert "--set" not in err.split(message)[0]


def test_a_did_you_mean_ends_the_line_without_a_second_stop(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path),
                      overrides={"facility.flexibility.merit_order": ["battery", "powercap"]})
    line = str(info.value).splitlines()[1]
    assert line.endswith("unknown lever 'powercap'; expected names from ['battery', 'inference', "
                         "'power_cap', 'deferral']. Did you mean 'power_cap'?")


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_help_shows_examples_and_where_the_bundled_scenarios_are(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert f"examples:\n  aiload {command} " in out
    assert "--set takes TOML values: numbers and true/false bare, date-times with a time zone" in out
    folder = Path(out.split("copy a bundled one from\n  ")[1].splitlines()[0])
    assert "inference-1mw" in bundled_names()
    assert sorted(p.stem for p in folder.glob("*.toml")) == bundled_names()


@pytest.mark.parametrize("address, reason", [
    ("foo", "not a scheduler address (missing port number in address 'foo')"),
    ("tcp://127.0.0.1:1", "cannot connect (Connection refused): nothing listens there"),
])
def test_a_scheduler_that_does_not_answer_is_refused_before_anything_is_written(
        tmp_path, capsys, monkeypatch, address, reason):
    # was a traceback from inside Dask after the sweep's plan had been written
    monkeypatch.setattr("scenarios.sweep.SCHEDULER_TIMEOUT_S", 1.0)
    err = _refused(tmp_path, capsys, [str(_scenario(tmp_path)), "--scheduler", address],
                   command="sweep")
    # other services at the address: tests/scenarios/test_hostile_scheduler.py
    assert (f"--scheduler {address!r}: {reason}; expected the address of a running `dask "
            "scheduler` (tcp://HOST:PORT, port 8786 by default; its dashboard on port 8787 is "
            "not it), or leave --scheduler out for a local cluster (--workers N). Nothing was "
            "written.") in err


def test_a_quoted_home_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _scenario(tmp_path)
    assert load_scenario("~/s.toml").name == "t"


def test_profiles_filter_that_matches_nothing_names_the_known_values(capsys):
    # printed an empty table ("Columns: [...] Index: []") and exited 0
    assert main(["profiles", "--workload", "trainin"]) == 2
    err = capsys.readouterr().err
    assert ("aiload profiles: error: --workload 'trainin': no bundled profile has this workload. "
            "Did you mean 'training'? Known: ") in err
    assert main(["profiles", "--hardware", "H100"]) == 2
    assert "Did you mean '4xH100'?" in capsys.readouterr().err


def test_a_grid_table_with_no_study_is_refused(tmp_path):
    # ran the facility and wrote only the grid's load series, without a word
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + '[grid]\nnetwork = "cigre_mv"\nbus = 5\nstudies = []\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert ("line 12: field 'grid.studies' = []: no study; expected one or more of 'timeseries', "
            "'hosting_capacity', ") in str(info.value)
    assert ("leave the key out for the default studies, or remove the [grid] table for none."
            ) in str(info.value)


def test_a_quoted_text_with_commas_is_one_set_value(tmp_path, capsys):
    from scenarios.loader import parse_set

    # there was no way to give a text with a comma: it was always split into values
    assert parse_set('description="Hello, world"') == ("description", ["Hello, world"])
    assert parse_set('grid.network="a","b"') == ("grid.network", ["a", "b"])
    err = _refused(tmp_path, capsys, [str(_scenario(tmp_path)), "--set", "description=Hello, world"])
    assert ("--set description: `aiload run` takes one value, got 2; use `aiload sweep` for "
            "several (a text with commas goes in double quotes: --set 'description=\"a, b\"').") in err


def test_a_study_step_that_does_not_divide_the_horizon_is_refused(tmp_path, capsys, monkeypatch,
                                                                  grid_pkg):
    # 6 h 30 min at grid.freq = 1h: resampling keeps whole hours, the last 30 min left the
    # grid study without a word
    _forbid(monkeypatch, "scenarios.studies.facility")
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.replace("06:00:00Z", "06:30:00Z")
                    + '[grid]\nnetwork = "cigre_mv"\nbus = 5\nstudies = ["timeseries"]\n')
    err = _refused(tmp_path, capsys, [str(path)])
    assert ("grid.freq = '1h' does not divide the facility horizon 2025-01-01T00:00:00Z .. "
            "2025-01-01T06:30:00Z: the last 30 min would be left out of the grid study. Set "
            "facility.end = 2025-01-01T06:00:00Z or 2025-01-01T07:00:00Z, or a grid.freq that "
            "divides the horizon.") in err


def test_a_sweep_over_the_horizon_or_resolution_is_refused_before_it_runs(tmp_path, capsys,
                                                                          monkeypatch):
    # every case was computed, then the bands failed in pandas ("Length of values (360) does
    # not match length of index (180)"), leaving the task files behind
    _forbid(monkeypatch, "scenarios.sweep.run_task")
    err = _refused(tmp_path, capsys, [str(_scenario(tmp_path)), "--workers", "0", "--set",
                                      "facility.end=2025-01-01T03:00:00Z,2025-01-01T06:00:00Z"],
                   command="sweep")
    assert ("the sweep's cases have different time steps (facility.end takes several values); a "
            "sweep compares its cases step by step, so they share facility.start, end and freq."
            ) in err
