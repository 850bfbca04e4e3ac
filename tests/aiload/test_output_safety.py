"""aiload.outputs: output paths never destroy what aiload did not write; no debris is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from aiload.errors import InputError
from aiload.outputs import (
    MARKER,
    OutputDir,
    OutputError,
    check_output_file,
    clean_debris,
    read_marker,
    write_atomic,
    write_marker,
)


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ output folders


def test_new_folder_gets_the_files_and_a_marker(tmp_path):
    with OutputDir(tmp_path / "out", kind="run") as out:
        (out.staging / "a.csv").write_text("1")
        assert out.commit() == ["a.csv"]
    assert _names(tmp_path / "out") == [MARKER, "a.csv"]
    marker = json.loads((tmp_path / "out" / MARKER).read_text())
    assert marker["tool"] == "aiload" and marker["kind"] == "run" and marker["files"] == ["a.csv"]


def test_user_folder_is_refused_and_left_alone(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"is not empty \(notes\.txt\) and is not an aiload "
                                          r"output.*--overwrite"):
        OutputDir(folder, kind="run")
    assert _names(folder) == ["notes.txt"]


def test_overwrite_replaces_only_ailoads_names(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / "a.csv").write_text("old")
    (folder / "sub").mkdir()
    with OutputDir(folder, kind="run", overwrite=True) as out:
        (out.staging / "a.csv").write_text("new")
        out.commit()
    assert (folder / "notes.txt").read_text() == "mine"
    assert (folder / "a.csv").read_text() == "new"
    assert (folder / "sub").is_dir()
    # a folder of the user's is never replaced by one of aiload's files
    with OutputDir(folder, kind="run", overwrite=True) as out:
        (out.staging / "a.csv").write_text("newer")
        (out.staging / "sub").write_text("file")
        with pytest.raises(OutputError, match="is a folder"):
            out.commit()
    assert (folder / "sub").is_dir()
    assert (folder / "a.csv").read_text() == "new"  # refused before any file moved


def test_rerun_replaces_own_files_and_drops_its_stale_ones(tmp_path):
    folder = tmp_path / "out"
    with OutputDir(folder, kind="run") as out:
        (out.staging / "a.csv").write_text("1")
        (out.staging / "grid.parquet").write_text("1")
        out.commit()
    (folder / "user.txt").write_text("added by the user later")
    with OutputDir(folder, kind="run") as out:  # no --overwrite needed: it is aiload's
        (out.staging / "a.csv").write_text("2")
        out.commit()
    assert _names(folder) == [MARKER, "a.csv", "user.txt"]
    assert (folder / "a.csv").read_text() == "2"


def test_a_crafted_marker_cannot_name_files_outside_its_folder(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (folder / MARKER).write_text(json.dumps(
        {"tool": "aiload", "kind": "run", "files": ["../victim.txt", str(victim), "..", "ok.csv"]}))
    assert read_marker(folder)["files"] == ["ok.csv"]
    with OutputDir(folder, kind="run") as out:
        (out.staging / "b.csv").write_text("1")
        out.commit()
    assert victim.read_text() == "precious"


def test_failed_write_leaves_the_earlier_output_and_removes_a_new_folder(tmp_path):
    folder = tmp_path / "out"
    with OutputDir(folder, kind="run") as out:
        (out.staging / "a.csv").write_text("1")
        out.commit()
    with pytest.raises(RuntimeError), OutputDir(folder, kind="run") as out:
        (out.staging / "a.csv").write_text("2")
        raise RuntimeError("disk full")
    assert _names(folder) == [MARKER, "a.csv"] and (folder / "a.csv").read_text() == "1"
    with pytest.raises(RuntimeError), OutputDir(tmp_path / "new", kind="run") as out:
        raise RuntimeError("disk full")
    assert _names(tmp_path) == ["out"]


@pytest.mark.parametrize("case", ["file", "cwd", "parent_of_cwd", "scenario", "no_parent",
                                  "other_kind"])
def test_bad_output_folders_are_refused_before_anything(tmp_path, monkeypatch, case):
    scenario = tmp_path / "study" / "s.toml"
    scenario.parent.mkdir()
    scenario.write_text("name = 'x'")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path, message = {
        "file": (scenario, "is a file, not a folder"),
        "cwd": (".", "is the current folder or holds it"),
        "parent_of_cwd": (tmp_path, "is the current folder or holds it"),
        "scenario": (scenario.parent, "holds the scenario file"),
        "no_parent": (tmp_path / "missing" / "out", "does not exist; create it first"),
        "other_kind": (tmp_path / "sweep", "holds an aiload sweep output, not a run output"),
    }[case]
    if case == "other_kind":
        path.mkdir()
        (path / "sweep.json").write_text("{}")
        write_marker(path, "sweep", ["sweep.json"])
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(OutputError, match=message):
        OutputDir(path, kind="run", protect=[scenario])
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_read_only_parent_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="no permission to write"):
            OutputDir(ro / "out", kind="run")
    finally:
        ro.chmod(0o755)


# ------------------------------------------------------------------ single files


def test_output_file_checks(tmp_path):
    mine = tmp_path / "mine.parquet"
    mine.write_text("user data")
    with pytest.raises(OutputError, match="exists and was not written by aiload"):
        check_output_file(mine)
    assert check_output_file(mine, is_ours=lambda p: True) == mine
    assert check_output_file(mine, overwrite=True) == mine
    with pytest.raises(OutputError, match="is a folder"):
        check_output_file(tmp_path)
    with pytest.raises(OutputError, match="does not exist"):
        check_output_file(tmp_path / "nope" / "x.parquet")
    assert mine.read_text() == "user data"


def test_write_atomic_leaves_the_target_on_failure(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")

    def fail(tmp):
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_atomic(target, fail)
    assert _names(tmp_path) == ["t.csv"] and target.read_text() == "old"


def test_stream_to_is_checked_before_the_simulation(tmp_path, monkeypatch):
    import aiload
    import aiload.facility.model as model

    def must_not_run(*args, **kwargs):
        raise AssertionError("the facility model ran before stream_to was checked")

    monkeypatch.setattr(model, "_simulate", must_not_run)
    user = tmp_path / "data.parquet"
    pd.DataFrame({"x": [1.0]}).to_parquet(user)
    kw = dict(start="2025-01-06 00:00+00:00", end="1h", freq="15min", progress=False)
    with pytest.raises(InputError, match="stream_to .* exists and was not written by aiload"):
        aiload.facility("inference-1mw", stream_to=user, **kw)
    with pytest.raises(InputError, match="stream_to .* is a folder"):
        aiload.facility("inference-1mw", stream_to=tmp_path, **kw)
    with pytest.raises(InputError, match="does not exist; create it first"):
        aiload.facility("inference-1mw", stream_to=tmp_path / "no" / "f.parquet", **kw)
    assert pd.read_parquet(user)["x"].tolist() == [1.0]


def test_stream_to_replaces_an_earlier_facility_file_and_clears_its_debris(tmp_path):
    import aiload
    from aiload.facility import read_facility

    path = tmp_path / "f.parquet"
    kw = dict(start="2025-01-06 00:00+00:00", end="2h", freq="15min", progress=False)
    aiload.facility("inference-1mw", stream_to=path, seed=1, **kw)
    # debris of a writer that was killed (a process id that cannot be running)
    stale = tmp_path / f".f.parquet.{2**22 + 7}-0123abcd.tmp"
    stale.write_text("half")
    direct = aiload.facility("inference-1mw", seed=2, **kw)
    aiload.facility("inference-1mw", stream_to=path, seed=2, **kw)
    np.testing.assert_array_equal(read_facility(path).power["facility_kw"].to_numpy(),
                                  direct.power["facility_kw"].to_numpy())
    assert _names(tmp_path) == ["f.parquet"]


def test_stream_to_never_replaces_a_job_log_or_an_events_table(tmp_path):
    """Both siblings carry aiload's metadata, but neither is a power file: streaming onto one
    would destroy the record of another run."""
    import aiload

    kw = dict(start="2025-01-06 00:00+00:00", end="1h", freq="15min", progress=False)
    aiload.facility("colocation-10mw", nodes=64, seed=1, **kw).to_parquet(
        tmp_path / "jobs_run.parquet", jobs=True)
    aiload.facility("inference-1mw", power_limit_kw=1.0, **kw).to_parquet(
        tmp_path / "limited.parquet")
    for sibling, name in (("jobs_run.jobs.parquet", "job log"),
                          ("limited.flexibility.parquet", "events table")):
        before = (tmp_path / sibling).read_bytes()
        with pytest.raises(InputError, match=f"stream_to .* is the {name} of a facility file"):
            aiload.facility("inference-1mw", stream_to=tmp_path / sibling, **kw)
        assert (tmp_path / sibling).read_bytes() == before
        # nor does a power file written under a sibling's name
        with pytest.raises(InputError, match=f"is the {name} of another facility file"):
            aiload.facility("inference-1mw", **kw).to_parquet(tmp_path / sibling)
        assert (tmp_path / sibling).read_bytes() == before


def test_to_parquet_replaces_only_its_own_power_file(tmp_path):
    import aiload
    from aiload.facility import read_facility

    kw = dict(start="2025-01-06 00:00+00:00", end="1h", freq="15min", progress=False)
    user = tmp_path / "data.parquet"
    pd.DataFrame({"x": [1.0]}).to_parquet(user)
    first, second = (aiload.facility("inference-1mw", seed=s, **kw) for s in (1, 2))
    with pytest.raises(InputError, match="the facility file .* was not written by aiload"):
        first.to_parquet(user)
    assert pd.read_parquet(user)["x"].tolist() == [1.0] and _names(tmp_path) == ["data.parquet"]
    with pytest.raises(InputError, match="is a folder"):
        first.to_parquet(tmp_path)
    path = tmp_path / "f.parquet"
    first.to_parquet(path)
    second.to_parquet(path)  # aiload's own power file: replaced
    pd.testing.assert_frame_equal(read_facility(path).power, second.power)
    with pytest.raises(InputError, match=r"write_facility\(overwrite=\): expected True or False, "
                                         r"got 'False'"):
        first.to_parquet(user, overwrite="False")
    with pytest.raises(InputError, match=r"write_facility\(jobs=\): expected True or False"):
        first.to_parquet(path, jobs=1)
    assert pd.read_parquet(user)["x"].tolist() == [1.0]
    first.to_parquet(user, overwrite=True)  # asked for: replaced
    pd.testing.assert_frame_equal(read_facility(user).power, first.power)


def test_recorder_output_is_checked_before_sources_open(tmp_path):
    from aiload.measure import Recorder

    (tmp_path / "d.parquet").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        Recorder(tmp_path / "d.parquet", overwrite=True, gpu=False, cpu=True,
                 powercap_root=tmp_path).start()
    with pytest.raises(InputError, match="does not exist; create it first"):
        Recorder(tmp_path / "no" / "r.parquet", gpu=False, cpu=True,
                 powercap_root=tmp_path).start()


# ------------------------------------------------------------------ interrupted writes

_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from aiload.outputs import OutputDir, signals_as_interrupts, write_atomic

    mode, folder = sys.argv[1], Path(sys.argv[2])

    def slow(tmp):
        Path(tmp).write_bytes(b"x" * 1000)
        print("writing", flush=True)
        time.sleep(60)

    with signals_as_interrupts():
        if mode == "file":
            write_atomic(folder / "out.bin", slow)
        else:
            with OutputDir(folder / "out", kind="run") as out:
                slow(out.staging / "a.bin")
""")


def _start_writer(tmp_path, mode):
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    work = tmp_path / "w"
    work.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), mode, str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing", proc.stderr.read()
    return proc, work


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("mode", ["file", "folder"])
def test_signal_mid_write_leaves_no_debris(tmp_path, signum, mode):
    proc, work = _start_writer(tmp_path, mode)
    proc.send_signal(signum)
    assert proc.wait(timeout=30) != 0
    # nothing half-written, no temporary file, no staging folder, no empty output folder
    assert list(work.rglob("*")) == []


def test_debris_of_a_killed_writer_is_cleared_by_the_next_run(tmp_path):
    proc, work = _start_writer(tmp_path, "file")
    proc.kill()  # SIGKILL: no cleanup can run
    proc.wait(timeout=30)
    left = [p.name for p in work.iterdir()]
    assert len(left) == 1 and left[0].startswith(".out.bin.") and left[0].endswith(".tmp")
    check_output_file(work / "out.bin")
    assert list(work.iterdir()) == []


def test_debris_of_a_running_writer_is_kept(tmp_path):
    live = tmp_path / f".x.csv.{os.getpid()}-0123abcd.tmp"
    live.write_text("being written")
    assert clean_debris(tmp_path) == [] and live.exists()


def test_metrics_plot_folder_is_checked_before_any_file_is_read(tmp_path):
    import argparse

    from aiload.metrics.cli import register

    parser = argparse.ArgumentParser(prog="aiload")
    register(parser.add_subparsers(dest="command"))
    folder = tmp_path / "figures"
    folder.mkdir()
    (folder / "paper.png").write_bytes(b"mine")
    # the input does not exist: the plot folder is refused first, so that is never looked at
    args = parser.parse_args(["metrics", str(tmp_path / "missing.csv"), "--plot", str(folder)])
    with pytest.raises(OutputError, match=r"figures' is not empty \(paper\.png\)"):
        args.func(args)
    assert _names(folder) == ["paper.png"]


def test_read_facility_names_what_it_was_given(tmp_path):
    from aiload.facility import read_facility

    with pytest.raises(InputError, match=r"'.*nope.parquet' does not exist; give the power file"):
        read_facility(tmp_path / "nope.parquet")
    with pytest.raises(InputError, match=r"is a folder; give the power file"):
        read_facility(tmp_path)
    (tmp_path / "f.csv").write_text("time,facility_kw\n2025-01-01T00:00Z,1.0\n")
    with pytest.raises(InputError, match=r"is not a readable Parquet file .* not a CSV"):
        read_facility(tmp_path / "f.csv")
    pd.DataFrame({"x": [1.0]}).to_parquet(tmp_path / "user.parquet")
    with pytest.raises(InputError, match="no 'aiload' metadata; not a facility file"):
        read_facility(tmp_path / "user.parquet")
