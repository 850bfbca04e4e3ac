"""Scenario files: their paths resolve against their own folder; network files stay data."""

from __future__ import annotations

import json
import textwrap

import pandapower as pp
import pandapower.networks as pn
import pytest

from scenarios.cli import main
from scenarios.loader import ScenarioError, load_scenario

SCENARIO = textwrap.dedent("""\
    name = "grid-study"
    [facility]
    preset = "inference-1mw"
    start = 2025-01-01T00:00:00Z
    end = 2025-01-01T06:00:00Z
    freq = "15min"
    [grid]
    network = "{network}"
    bus = 5
    studies = ["timeseries"]
""")


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A scenario file beside its network file, and the current folder somewhere else."""
    folder = tmp_path / "study"
    folder.mkdir()
    pp.to_json(pn.create_cigre_network_mv(), str(folder / "net.json"))
    (folder / "s.toml").write_text(SCENARIO.format(network="net.json"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder, elsewhere


def test_network_path_is_relative_to_the_scenario_file(study):
    folder, _ = study
    scenario = load_scenario(folder / "s.toml")
    assert scenario.grid.network == str((folder / "net.json").resolve())


def test_set_path_is_relative_to_the_current_folder(study):
    folder, elsewhere = study
    pp.to_json(pn.case33bw(), str(elsewhere / "other.json"))
    scenario = load_scenario(folder / "s.toml", overrides={"grid.network": "other.json"})
    assert scenario.grid.network == str((elsewhere / "other.json").resolve())
    with pytest.raises(ScenarioError, match=r"--set grid\.network: field 'grid\.network' = "
                                            r"'net\.json': no such file"):
        load_scenario(folder / "s.toml", overrides={"grid.network": "net.json"})


def test_missing_network_file_names_the_line(study):
    folder, _ = study
    (folder / "s.toml").write_text(SCENARIO.format(network="missing.json"))
    with pytest.raises(ScenarioError, match=r"s\.toml':\n  line 8: field 'grid\.network' = "
                                            r"'missing\.json': no such file \(.*study/missing"):
        load_scenario(folder / "s.toml")


def test_crafted_network_is_refused_before_the_run(study, capsys, monkeypatch):
    folder, elsewhere = study

    def must_not_run(*args, **kwargs):
        raise AssertionError("the facility model ran with a refused network")

    monkeypatch.setattr("scenarios.studies.facility", must_not_run)
    document = json.loads((folder / "net.json").read_text())
    document["_object"]["x"] = {"_module": "this", "_class": "s", "_object": "{}"}
    (folder / "net.json").write_text(json.dumps(document))
    assert main(["run", str(folder / "s.toml"), "-o", str(elsewhere / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "names the object 's' of module 'this'" in err
    assert not (elsewhere / "out").exists()
