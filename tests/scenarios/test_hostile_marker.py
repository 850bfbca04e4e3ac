"""Issue 26, hostile inputs: the output marker (.aiload-output.json) edited to list a user's
files. The next run deletes only files it wrote itself, by its own names, still as it left
them, inside the output folder: never a file the marker merely names."""

from __future__ import annotations

import json
import os

import pytest

from aiload.outputs import MARKER, OutputDir, read_marker
from scenarios.runner import run_scenario

ONE_DAY = {"facility.end": "2025-01-02T00:00:00Z", "outputs.report": False}


def _edit_marker(folder, extra):
    marker = json.loads((folder / MARKER).read_text())
    marker["files"] = [*marker["files"], *extra]
    (folder / MARKER).write_text(json.dumps(marker))


def _hostile_setup(tmp_path, folder):
    """User files in and around ``folder``, each listed in its marker in a hostile way."""
    victim = tmp_path / "victim.parquet"
    victim.write_text("precious, outside")
    (folder / "notes.csv").write_text("mine, inside")
    # a name of the runner's own pattern, but the user's file
    (folder / "grid_mine.parquet").write_text("mine, with an aiload-like name")
    (folder / "microgrid_link.parquet").symlink_to(victim)
    listed = ["notes.csv", "grid_mine.parquet", "microgrid_link.parquet", str(victim),
              "../victim.parquet", "./notes.csv", "..", "sub/../notes.csv"]
    _edit_marker(folder, listed)
    return victim


def _assert_untouched(tmp_path, folder, victim):
    assert victim.read_text() == "precious, outside"
    assert (folder / "notes.csv").read_text() == "mine, inside"
    assert (folder / "grid_mine.parquet").read_text() == "mine, with an aiload-like name"
    assert (folder / "microgrid_link.parquet").is_symlink()
    assert os.readlink(folder / "microgrid_link.parquet") == str(victim)
    # and the new marker does not adopt them: a third run cannot delete them either
    assert set(read_marker(folder)["files"]).isdisjoint(
        {"notes.csv", "grid_mine.parquet", "microgrid_link.parquet"})


def test_output_dir_deletes_only_its_own_unchanged_files(tmp_path):
    folder = tmp_path / "out"
    with OutputDir(folder, kind="run") as out:
        for name in ("a.csv", "old.csv", "edited.csv"):
            (out.staging / name).write_text("aiload")
        out.commit()
    victim = _hostile_setup(tmp_path, folder)
    # a file aiload wrote that the user changed afterwards is now the user's
    (folder / "edited.csv").write_text("the user's edits")
    with OutputDir(folder, kind="run") as out:
        (out.staging / "a.csv").write_text("again")
        out.commit()
    _assert_untouched(tmp_path, folder, victim)
    assert not (folder / "old.csv").exists()  # aiload's own, unchanged: dropped
    assert (folder / "edited.csv").read_text() == "the user's edits"
    assert read_marker(folder)["files"] == ["a.csv"]


def test_output_dir_owns_limits_deletion_to_known_names(tmp_path):
    folder = tmp_path / "out"
    with OutputDir(folder, kind="plots") as out:
        (out.staging / "x_psd.png").write_text("aiload")
        (out.staging / "other.txt").write_text("aiload")
        out.commit()
    with OutputDir(folder, kind="plots", owns=lambda n: n.endswith("_psd.png")) as out:
        (out.staging / "y_psd.png").write_text("aiload")
        out.commit()
    assert sorted(p.name for p in folder.iterdir()) == [MARKER, "other.txt", "y_psd.png"]


def test_a_forged_record_cannot_delete_a_symlinked_or_foreign_file(tmp_path):
    folder = tmp_path / "out"
    with OutputDir(folder, kind="run") as out:
        (out.staging / "a.csv").write_text("aiload")
        out.commit()
    victim = tmp_path / "victim.csv"
    victim.write_text("precious")
    (folder / "b.csv").symlink_to(victim)
    marker = json.loads((folder / MARKER).read_text())
    info = (folder / "b.csv").lstat()
    marker["files"].append("b.csv")
    marker["stat"]["b.csv"] = [info.st_size, info.st_mtime_ns]  # the link's own record
    (folder / MARKER).write_text(json.dumps(marker))
    with OutputDir(folder, kind="run") as out:
        (out.staging / "a.csv").write_text("again")
        out.commit()
    assert (folder / "b.csv").is_symlink() and victim.read_text() == "precious"


def test_aiload_run_never_deletes_what_an_edited_marker_lists(tmp_path, facility_fn):
    folder = tmp_path / "out"
    run_scenario("inference-1mw", folder, progress=False,
                 overrides={**ONE_DAY, "outputs.jobs": True})
    assert (folder / "facility.jobs.parquet").is_file()
    victim = _hostile_setup(tmp_path, folder)
    result = run_scenario("inference-1mw", folder, progress=False, overrides=ONE_DAY)
    _assert_untouched(tmp_path, folder, victim)
    # the run's own file that this run no longer writes is still dropped
    assert not (folder / "facility.jobs.parquet").exists()
    assert sorted(read_marker(folder)["files"]) == sorted(result.files)
    assert set(result.files) == {"facility.parquet", "metrics.csv", "summary.json"}


@pytest.mark.parametrize("name", ["facility.parquet", "facility.jobs.parquet",
                                  "facility.flexibility.parquet", "facility_bands.parquet",
                                  "grid_timeseries_vm_pu.parquet", "microgrid_dispatch.parquet",
                                  "metrics.csv", "summary.json", "report.html"])
def test_the_runner_knows_its_own_names(name):
    from scenarios.runner import _RUN_FILE

    assert _RUN_FILE.match(name)
    assert not _RUN_FILE.match("notes.csv") and not _RUN_FILE.match("../summary.json")
