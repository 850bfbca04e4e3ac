"""aiload's own trace files, written with the recorder's writer from REAL samples.

No aiload recording of a real GPU is in ../shared/data, so the files are written by
``aiload.measure.writer`` (the code ``aiload record`` uses) from the 4 x H100 NVML log of
wattameter-example-logs, and the reader must return exactly those samples.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiload.errors import TraceFormatError
from aiload.measure.writer import StreamWriter, finalize, partial_path, trace_schema
from aiload.traces import read_trace

NVML = "wattameter-example-logs/nvml_wattameter.log"


@pytest.fixture(scope="module")
def real(data_dir):
    lines = [ln.split() for ln in (data_dir / NVML).read_text().splitlines() if not ln.startswith("#")]
    t = pd.to_datetime([r[0] for r in lines], format="%Y-%m-%d_%H:%M:%S.%f").tz_localize("UTC")
    read_s = np.array([int(r[1]) for r in lines]) / 1e9
    watts = np.array([[int(x) for x in r[2:6]] for r in lines]) / 1000
    temp = np.array([[float(x) for x in r[6:10]] for r in lines])
    return t, read_s, watts, temp


def metadata(host="node-a", reading="averaged", end="2025-10-07T09:38:54Z"):
    return {
        "format": "aiload-trace",
        "format_version": 1,
        "host": host,
        "gpu_models": ["NVIDIA H100 80GB HBM3"] * 4,
        "driver_version": "550.54.15",
        "nvml_version": "12.550",
        "command": ["python", "train.py"],
        "label": "llama-finetune",
        "start": "2025-10-07T09:38:40Z",
        "end": end,
        "interval_s": 0.1,
        "power_reading": {f"gpu{i}": reading for i in range(4)},
        "hardware": "4x NVIDIA H100 80GB HBM3",
        "aiload_version": "0.1.0",
    }


COLUMNS = [f"gpu{i}_power_w" for i in range(4)] + [f"gpu{i}_temperature_c" for i in range(4)]


def write_stream(path, real, meta, batches=4):
    t, read_s, watts, temp = real
    schema = trace_schema(COLUMNS, meta)
    writer = StreamWriter(partial_path(path), schema)
    for rows in np.array_split(np.arange(len(t)), batches):
        cols = [read_s[rows]] + [watts[rows, i] for i in range(4)] + [temp[rows, i] for i in range(4)]
        writer.write(t.asi8[rows].tolist(), [c.tolist() for c in cols])
    writer.close()
    return partial_path(path)


def test_parquet_returns_the_recorded_samples(tmp_path, real):
    t, read_s, watts, temp = real
    final = tmp_path / "node-a.parquet"
    finalize(write_stream(final, real, metadata(end=None)), final, "2025-10-07T09:38:54Z")
    trace = read_trace(final)
    assert trace.meta.format == "aiload" and trace.meta.hardware == "4xH100"
    assert trace.meta.workload == "llama-finetune" and trace.meta.reading == "averaged"
    assert trace.meta.extra["complete"] is True
    np.testing.assert_array_equal(trace.power_w.to_numpy(), watts)
    assert (trace.power_w.index == t).all()
    np.testing.assert_array_equal(trace.channels["read_duration_s"], read_s)
    t_s = (t - t[0]).total_seconds().to_numpy()
    assert trace.energy_wh() == pytest.approx(np.trapezoid(watts.sum(axis=1), t_s) / 3600, rel=1e-9)


def test_partial_stream_cut_mid_batch_keeps_complete_batches(tmp_path, real):
    t, _, watts, _ = real
    stream = write_stream(tmp_path / "node-a.parquet", real, metadata(end=None, reading="instantaneous"))
    data = stream.read_bytes()
    stream.write_bytes(data[: len(data) - 300])  # a kill in the middle of the last batch
    trace = read_trace(stream)
    n = len(np.array_split(np.arange(len(t)), 4)[-1])
    assert len(trace.power_w) == len(t) - n
    np.testing.assert_array_equal(trace.power_w.to_numpy(), watts[: len(t) - n])
    assert trace.meta.extra["complete"] is False and trace.meta.reading == "instantaneous"


def test_two_hosts_combine_as_host_slash_device(tmp_path, real):
    paths = []
    for host in ("node-a", "node-b"):
        final = tmp_path / f"{host}.parquet"
        finalize(write_stream(final, real, metadata(host=host)), final, "2025-10-07T09:38:54Z")
        paths.append(final)
    trace = read_trace(paths)
    assert trace.meta.n_nodes == 2
    assert list(trace.power_w.columns)[:2] == ["node-a/gpu0", "node-a/gpu1"]
    nodes = trace.per_node_w()
    assert list(nodes.columns) == ["node-a", "node-b"]
    np.testing.assert_allclose(nodes["node-a"], nodes["node-b"], rtol=1e-12)
    assert read_trace(tmp_path).meta.n_nodes == 2  # the directory reads the same


def test_wrong_version_and_empty_recording_are_rejected(tmp_path, real):
    meta = metadata() | {"format_version": 2}
    stream = write_stream(tmp_path / "v2.parquet", real, meta)
    with pytest.raises(TraceFormatError, match=r"version 2; expected 'aiload-trace' version 1"):
        read_trace(stream)
    writer = StreamWriter(tmp_path / "empty.parquet.partial.arrows", trace_schema(COLUMNS, metadata()))
    writer.close()
    with pytest.raises(TraceFormatError, match="empty.parquet.partial.arrows: the recording holds no samples"):
        read_trace(tmp_path / "empty.parquet.partial.arrows")
