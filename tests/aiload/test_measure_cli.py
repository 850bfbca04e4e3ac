"""``aiload record``: exit codes, signals, a process killed mid-recording, no-source errors."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import aiload
from _measure_fakes import FakeNvml, make_powercap

from aiload.errors import InputError
from aiload.measure import SourceUnavailableError, finalize, read_partial
from aiload.measure.cli import expand_output, record, register
from aiload.measure.writer import METADATA_KEY

FAKES_DIR = Path(__file__).resolve().parent


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aiload")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["record", *argv])


def _meta(table) -> dict:
    return json.loads(table.schema.metadata[METADATA_KEY])


def _start_script(tmp_path: Path, body: str) -> subprocess.Popen:
    """Run a Python script that records with the fake NVML in its own process."""
    script = tmp_path / "job.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(FAKES_DIR)!r})\n" + textwrap.dedent(body)
    )
    return subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_rows(partial: Path, rows: int, proc: subprocess.Popen, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"recorder exited early ({proc.returncode}): {proc.stderr.read()}")
        if partial.exists():
            table = read_partial(partial)
            if table.num_rows >= rows:
                return table
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no {rows} rows in {partial} after {timeout_s} s")


def test_command_exit_code_is_returned_and_recorded(tmp_path):
    out = tmp_path / "run.parquet"
    args = _args("-o", str(out), "--interval", "0.02", "--label", "exit three", "--",
                 sys.executable, "-c", "import time, sys; time.sleep(0.5); sys.exit(3)")
    assert record(args, nvml=FakeNvml(), powercap_root=make_powercap(tmp_path / "pc")) == 3
    table = pq.read_table(out)
    meta = _meta(table)
    assert meta["command"][1:] == ["-c", "import time, sys; time.sleep(0.5); sys.exit(3)"]
    assert meta["label"] == "exit three" and meta["end"] is not None
    assert table.num_rows >= 10  # ~25 samples in 0.5 s; a loaded machine may skip some


def test_power_only_records_power_and_energy(tmp_path):
    out = tmp_path / "p.parquet"
    args = _args("-o", str(out), "--duration", "0.2", "--interval", "0.05", "--power-only")
    assert record(args, nvml=FakeNvml(power_w=(300.0,)), powercap_root=tmp_path / "no-rapl") == 0
    assert pq.read_table(out).column_names == ["time", "read_duration_s", "gpu0_power_w", "gpu0_energy_j"]


def test_duration_without_command_and_cpu_only(tmp_path):
    out = tmp_path / "idle.parquet"
    args = _args("-o", str(out), "--duration", "0.3", "--interval", "0.05", "--cpu-only")
    assert record(args, nvml=FakeNvml(driver=False), powercap_root=make_powercap(tmp_path / "pc")) == 0
    table = pq.read_table(out)
    assert [c for c in table.column_names if c.endswith("_power_w")] == ["cpu0_power_w", "cpu1_power_w"]
    assert 3 <= table.num_rows <= 7  # 6 ticks (+ the reading at stop)


def test_host_placeholder_gives_one_file_per_node():
    assert expand_output("runs/job-{host}.parquet", host="node17") == Path("runs/job-node17.parquet")


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--duration", "1", "--", "sleep", "1"], r"got both --duration 1\.0 and a command \(sleep 1\)"),
        ([], r"nothing to record: give a command after '--'"),
        (["--", "no-such-command-xyz"], r"command not found: 'no-such-command-xyz'"),
        (["--duration", "-2"], r"--duration must be a positive number of seconds, got -2\.0"),
    ],
)
def test_usage_errors_are_explained_and_leave_no_file(tmp_path, argv, match):
    with pytest.raises(InputError, match=match):
        record(_args("-o", str(tmp_path / "x.parquet"), *argv), nvml=FakeNvml())
    assert list(tmp_path.iterdir()) == []


def test_no_driver_no_rapl_is_an_error_with_no_file(tmp_path):
    args = _args("-o", str(tmp_path / "x.parquet"), "--duration", "1")
    no_source = r"nothing to record on this machine.*no usable NVIDIA driver"
    with pytest.raises(SourceUnavailableError, match=no_source):
        record(args, nvml=FakeNvml(driver=False), powercap_root=tmp_path / "missing")
    args = _args("-o", str(tmp_path / "x.parquet"), "--duration", "1")
    with pytest.raises(SourceUnavailableError, match=r"--cpu-only"):
        record(args, nvml=FakeNvml(driver=False), powercap_root=make_powercap(tmp_path / "pc"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pc"]  # no .parquet, no .arrows


def test_sigkill_mid_recording_keeps_every_sample_up_to_the_last_flush(tmp_path):
    out = tmp_path / "killed.parquet"
    proc = _start_script(tmp_path, f"""
        import time
        from _measure_fakes import FakeNvml
        from aiload.measure import Recorder
        Recorder({str(out)!r}, interval_s=0.02, flush_interval_s=0.2, cpu=False,
                 nvml=FakeNvml(power_w=(321.0,))).start()
        time.sleep(60)
    """)
    partial = out.with_name(out.name + ".partial.arrows")
    seen = _wait_for_rows(partial, 40, proc)
    proc.send_signal(signal.SIGKILL)
    killed_at_ns = time.time_ns()
    proc.wait(timeout=10)
    proc.stdout.close(), proc.stderr.close()
    assert not out.exists()  # never converted: the process had no chance
    table = read_partial(partial)
    df = table.to_pandas()
    # every flushed sample is there, in whole batches of 0.2 s / 0.02 s = 10 samples
    assert len(df) >= seen.num_rows and len(df) % 10 == 0
    assert (df["gpu0_power_w"] == 321.0).all()
    spacing_s = df["time"].diff().dt.total_seconds().iloc[1:]
    assert spacing_s.median() == pytest.approx(0.02, rel=0.2)
    assert spacing_s.max() < 0.5  # no batch missing in the middle
    # at most one flush interval (plus scheduling slack on a busy machine) was lost
    lost_s = (killed_at_ns - df["time"].iloc[-1].value) / 1e9
    assert lost_s < 0.2 + 1.0
    assert _meta(table)["end"] is None
    # aiload.read_trace reads the interrupted recording as it is
    trace = aiload.read_trace(partial)
    assert trace.meta.extra["complete"] is False and trace.meta.reading == "instantaneous"
    assert len(trace.power_w) == len(df) and (trace.power_w["gpu0"] == 321.0).all()
    # the leftover stream converts to the final Parquet file, samples unchanged
    finalize(partial, out)
    assert not partial.exists()
    assert pq.read_table(out).equals(table.replace_schema_metadata(pq.read_table(out).schema.metadata))


def test_sigterm_ends_command_and_recording_cleanly(tmp_path):
    out = tmp_path / "term.parquet"
    proc = _start_script(tmp_path, f"""
        import argparse, sys
        from _measure_fakes import FakeNvml
        from aiload.measure.cli import record, register
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        args = parser.parse_args(["record", "-o", {str(out)!r}, "--interval", "0.02",
                                  "--flush-interval", "0.1", "--", sys.executable, "-c",
                                  "import time; time.sleep(60)"])
        sys.exit(record(args, nvml=FakeNvml(power_w=(280.0,))))
    """)
    _wait_for_rows(out.with_name(out.name + ".partial.arrows"), 10, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=20)
    # the command died of the forwarded SIGTERM: exit code 128 + 15, as a shell reports it
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr
    table = pq.read_table(out)
    assert not out.with_name(out.name + ".partial.arrows").exists()
    assert table.num_rows >= 10 and _meta(table)["end"] is not None
    assert set(table.column("gpu0_power_w").to_pylist()) == {280.0}
    trace = aiload.read_trace(out)
    assert trace.meta.extra["complete"] is True and list(trace.power_w.columns) == ["gpu0"]
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def _machine_has_a_power_source() -> bool:
    if any(Path("/sys/class/powercap").glob("intel-rapl:*")):
        return True
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


@pytest.mark.skipif(_machine_has_a_power_source(), reason="this machine has NVML or RAPL: it would record")
def test_real_sources_on_a_machine_without_them(tmp_path):
    # real pynvml and the real /sys/class/powercap (no fakes): a clear error and no file;
    # `aiload` turns this error into exit code 2 (scenarios.cli.main)
    args = _args("-o", str(tmp_path / "run-{host}.parquet"), "--duration", "5")
    with pytest.raises(SourceUnavailableError, match=r"nothing to record on this machine\. GPU: NVML could not"):
        record(args)
    assert list(tmp_path.iterdir()) == []
