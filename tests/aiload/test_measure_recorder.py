"""The Recorder end to end, with fake NVML and a fake powercap tree at the hardware boundary."""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
from _measure_fakes import FakeNvml, make_powercap

import aiload
from aiload.errors import InputError, TraceFormatError
from aiload.measure import Recorder, SourceUnavailableError, read_partial
from aiload.measure.writer import METADATA_KEY, StreamWriter, trace_schema


def _metadata(table):
    return json.loads(table.schema.metadata[METADATA_KEY])


def test_records_fixed_interval_samples_with_metadata(tmp_path):
    out = tmp_path / "run.parquet"
    fake = FakeNvml(power_w=(300.0, 350.0))
    with Recorder(out, interval_s=0.05, flush_interval_s=0.25, label="smoke", command=["python", "x.py"],
                  nvml=fake, powercap_root=make_powercap(tmp_path / "pc")) as rec:
        time.sleep(1.5)
    table = pq.read_table(out)
    assert not rec.partial_path.exists()
    df = table.to_pandas()
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    # ~30 ticks + the reading at stop; a loaded CI box may skip a few ticks, never add any
    assert 20 <= len(df) <= 32
    spacing_s = df["time"].diff().dt.total_seconds().to_numpy()[1:]
    assert np.median(spacing_s) == pytest.approx(0.05, rel=0.1)
    # absolute deadlines: the late ticks sit on the same grid as the early ones, not drifted.
    # Medians, because a busy CI machine delays single wake-ups (the first one included);
    # the deterministic check of the schedule is in test_measure_schedule.py. The final row
    # is the reading taken at stop, off the grid by design.
    ticks = np.round((df["time"] - df["time"].iloc[0]).dt.total_seconds() / 0.05)
    lateness_s = ((df["time"] - df["time"].iloc[0]).dt.total_seconds() - ticks * 0.05).iloc[:-1]
    assert abs(np.median(lateness_s.iloc[-8:]) - np.median(lateness_s.iloc[:8])) < 0.005
    assert (df["read_duration_s"] > 0).all() and (df["read_duration_s"] < 0.5).all()
    np.testing.assert_array_equal(df["gpu1_power_w"], 350.0)
    # energy counter and power agree: 300 W between first and last sample
    elapsed_s = spacing_s.sum()
    counter_j = df["gpu0_energy_j"].iloc[-1] - df["gpu0_energy_j"].iloc[0]
    assert counter_j == pytest.approx(300 * elapsed_s, rel=0.05)
    meta = _metadata(table)
    assert meta["format"] == "aiload-trace" and meta["format_version"] == 1
    assert meta["power_reading"] == {"gpu0": "instantaneous", "gpu1": "instantaneous",
                                     "cpu0": "counter-difference", "cpu1": "counter-difference"}
    assert meta["gpu_models"] == ["NVIDIA H100 80GB HBM3"] * 2
    assert meta["hardware"].startswith("2x NVIDIA H100 80GB HBM3")
    assert (meta["label"], meta["command"], meta["interval_s"]) == ("smoke", ["python", "x.py"], 0.05)
    assert meta["start"] < df["time"].iloc[0].isoformat() and meta["end"] > df["time"].iloc[-1].isoformat()
    assert fake.initialised == 0
    trace = aiload.read_trace(out)
    assert list(trace.power_w.columns) == ["gpu0", "gpu1", "cpu0", "cpu1"]
    assert trace.meta.reading == "instantaneous" and trace.meta.workload == "smoke"
    assert trace.meta.sampling_interval_s == pytest.approx(0.05, rel=0.1)


def test_reading_at_stop_covers_the_tail(tmp_path):
    out = tmp_path / "short.parquet"
    with Recorder(out, interval_s=1.0, nvml=FakeNvml(power_w=(123.0,)), cpu=False) as rec:
        time.sleep(0.7)  # shorter than one interval: no tick, but more than half of one
    df = pq.read_table(out).to_pandas()
    assert len(df) == 1 and df["gpu0_power_w"].iloc[0] == 123.0
    start = np.datetime64(rec.metadata["start"].replace("+00:00", ""), "ns")
    assert (df["time"].iloc[0].tz_localize(None) - start).total_seconds() == pytest.approx(0.7, abs=0.3)


def test_one_file_per_node_reads_back_as_one_run(tmp_path):
    files = [tmp_path / f"run-{host}.parquet" for host in ("node1", "node2")]
    recorders = [
        Recorder(path, interval_s=0.05, nvml=FakeNvml(power_w=power_w), cpu=False, host=path.stem[4:])
        for path, power_w in zip(files, ((200.0, 210.0), (400.0, 410.0)))
    ]
    for rec in recorders:
        rec.start()
    time.sleep(1.0)
    for rec in recorders:
        rec.stop()
    trace = aiload.read_trace(files)
    assert sorted(trace.power_w.columns) == ["node1/gpu0", "node1/gpu1", "node2/gpu0", "node2/gpu1"]
    # interval means of constant power are that power
    np.testing.assert_allclose(trace.power_w["node1/gpu1"].dropna(), 210.0)
    np.testing.assert_allclose(trace.power_w["node2/gpu0"].dropna(), 400.0)


def test_averaged_power_is_labelled_in_the_file(tmp_path):
    out = tmp_path / "avg.parquet"
    with Recorder(out, interval_s=0.05, nvml=FakeNvml(power_w=(250.0,), instant=False), cpu=False):
        time.sleep(0.2)
    assert _metadata(pq.read_table(out))["power_reading"] == {"gpu0": "averaged"}
    assert aiload.read_trace(out).meta.reading == "averaged"


def test_samples_are_flushed_while_recording(tmp_path):
    rec = Recorder(tmp_path / "f.parquet", interval_s=0.02, flush_interval_s=0.2, nvml=FakeNvml(), cpu=False)
    rec.start()
    try:
        deadline = time.monotonic() + 10
        table = read_partial(rec.partial_path)
        while table.num_rows < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
            table = read_partial(rec.partial_path)
    finally:
        rec.stop()
    # on disk before the stop, in whole batches of flush_interval / interval = 10 samples
    assert table.num_rows >= 30 and table.num_rows % 10 == 0
    assert _metadata(table)["end"] is None
    assert pq.read_table(rec.path).num_rows >= table.num_rows


def test_truncated_last_batch_is_ignored(tmp_path):
    path = tmp_path / "t.parquet.partial.arrows"
    writer = StreamWriter(path, trace_schema(["gpu0_power_w"], {"end": None}))
    for k in range(3):
        writer.write([k * 10**8 + i for i in range(5)], [[0.0] * 5, [100.0 + k] * 5])
    writer._file.close()  # as after SIGKILL: no end-of-stream marker
    data = path.read_bytes()
    path.write_bytes(data[:-40])  # cut the last batch short
    table = read_partial(path)
    assert table.num_rows == 10
    assert table.column("gpu0_power_w").to_pylist() == [100.0] * 5 + [101.0] * 5
    path.write_bytes(b"\xff\xff")
    with pytest.raises(TraceFormatError, match="stopped before its first write"):
        read_partial(path)


def test_no_source_leaves_no_file(tmp_path):
    out = tmp_path / "none.parquet"
    rec = Recorder(out, nvml=FakeNvml(driver=False), powercap_root=tmp_path / "no-powercap")
    with pytest.raises(SourceUnavailableError, match="nothing to record on this machine"):
        rec.start()
    assert list(tmp_path.iterdir()) == []


def test_failure_in_sampling_thread_keeps_samples_and_is_raised(tmp_path):
    fake = FakeNvml(power_w=(300.0,))
    rec = Recorder(tmp_path / "e.parquet", interval_s=0.02, flush_interval_s=0.1, nvml=fake, cpu=False)
    rec.start()
    time.sleep(0.3)

    def broken(*args):
        raise RuntimeError("binding crashed")  # not an NVMLError: the thread stops and reports it

    fake.nvmlDeviceGetTemperature = broken
    deadline = time.monotonic() + 10
    while rec.running and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not rec.running
    with pytest.raises(RuntimeError, match="binding crashed"):
        rec.stop()
    assert pq.read_table(rec.path).num_rows >= 5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"interval_s": 0}, r"interval_s must be a positive number of seconds, got 0"),
        ({"interval_s": 0.1, "flush_interval_s": 0.05}, r"flush_interval_s must be at least interval_s"),
    ],
)
def test_bad_configuration_is_explained(tmp_path, kwargs, match):
    with pytest.raises(InputError, match=match):
        Recorder(tmp_path / "x.parquet", **kwargs)


def test_output_name_and_existing_files(tmp_path):
    with pytest.raises(InputError, match=r"must be a \.parquet file, got .*run\.csv.*'run\.parquet'"):
        Recorder(tmp_path / "run.csv")
    existing = tmp_path / "old.parquet"
    existing.write_bytes(b"keep me")
    with pytest.raises(InputError, match="old.parquet exists; pass overwrite=True"):
        Recorder(existing, nvml=FakeNvml(), cpu=False).start()
    (tmp_path / "old.parquet.partial.arrows").write_bytes(b"")
    with pytest.raises(InputError, match="did not finish"):
        Recorder(existing, nvml=FakeNvml(), cpu=False, overwrite=True).start()
    assert existing.read_bytes() == b"keep me"
