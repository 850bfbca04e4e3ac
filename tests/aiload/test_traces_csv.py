"""nvidia-smi CSV and LLM-PowerTrace long CSV readers.

There are no nvidia-smi or LLM-PowerTrace files in ../shared/data, so each test writes one
from REAL samples - the 4 x H100 NVML log of wattameter-example-logs - in that tool's
layout, and checks the reader returns the values that were written.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiload.errors import TraceFormatError
from aiload.traces import read_trace

NVML = "wattameter-example-logs/nvml_wattameter.log"


@pytest.fixture(scope="module")
def real_gpus(data_dir):
    """Real per-GPU samples: times (naive, ms precision as nvidia-smi prints), W, deg C."""
    lines = [ln.split() for ln in (data_dir / NVML).read_text().splitlines() if not ln.startswith("#")]
    t = pd.to_datetime([r[0] for r in lines], format="%Y-%m-%d_%H:%M:%S.%f").floor("ms")
    mw = np.array([[int(x) for x in r[2:6]] for r in lines])
    temp = np.array([[int(x) for x in r[6:10]] for r in lines])
    return t, mw, temp


def write_smi(path, t, mw, temp, *, units=True, stagger_ms=0, field="power.draw"):
    unit = " [W]" if units else ""
    rows = [f"timestamp, name, index, {field}{unit}, temperature.gpu, utilization.gpu{' [%]' if units else ''}"]
    for k, stamp in enumerate(t):
        for g in range(mw.shape[1]):
            ts = (stamp + pd.Timedelta(g * stagger_ms, "ms")).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            w = f"{mw[k, g] / 1000:.3f}" + (" W" if units else "")
            u = "87 %" if units else "87"
            rows.append(f"{ts}, NVIDIA H100 80GB HBM3, {g}, {w}, {temp[k, g]}, {u}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("units", [True, False])
def test_nvidia_smi_returns_the_written_real_samples(tmp_path, real_gpus, units):
    t, mw, temp = real_gpus
    path = write_smi(tmp_path / "smi.csv", t, mw, temp, units=units)
    trace = read_trace(path)
    assert trace.meta.format == "nvidia-smi" and trace.meta.hardware == "4xH100"
    assert list(trace.power_w.columns) == ["gpu0", "gpu1", "gpu2", "gpu3"]
    np.testing.assert_array_equal(trace.power_w.to_numpy(), mw / 1000)
    assert (trace.power_w.index == t.tz_localize("UTC")).all()
    np.testing.assert_array_equal(trace.channels["gpu2_temperature_c"], temp[:, 2])
    assert (trace.channels["gpu0_util_pct"] == 87).all()
    t_s = (t - t[0]).total_seconds().to_numpy()
    assert trace.energy_wh() == pytest.approx(np.trapezoid(mw.sum(axis=1) / 1000, t_s) / 3600, rel=1e-9)
    assert trace.meta.reading == "unknown"


def test_nvidia_smi_instant_field_and_tz(tmp_path, real_gpus):
    t, mw, temp = real_gpus
    path = write_smi(tmp_path / "smi.csv", t, mw, temp, field="power.draw.instant")
    trace = read_trace(path, tz="Europe/Berlin")
    assert trace.meta.reading == "instantaneous"
    assert trace.power_w.index[0] == (t[0] - pd.Timedelta("2h")).tz_localize("UTC")  # CEST


def test_nvidia_smi_staggered_gpus_are_combined_with_energy_conserved(tmp_path, real_gpus):
    t, mw, temp = real_gpus
    path = write_smi(tmp_path / "smi.csv", t, mw, temp, stagger_ms=7)
    trace = read_trace(path)
    assert trace.meta.extra["values"] == "interval means"
    step = trace.meta.extra["grid_step_s"]
    a = trace.power_w.index[0].tz_localize(None)
    end = len(trace.power_w) * step
    for g in range(4):
        ts = ((t + pd.Timedelta(7 * g, "ms")) - a).total_seconds().to_numpy()
        x = np.concatenate([[0.0], ts[(ts > 0) & (ts < end)], [end]])
        exact = np.trapezoid(np.interp(x, ts, mw[:, g] / 1000), x)
        assert trace.power_w[f"gpu{g}"].sum() * step == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "smi.csv: the file is empty"),
        ("timestamp, index, power [W]\n2024/05/01 12:00:00.000, 0, 300 W\n", r"lacks \['power.draw'\]"),
        (
            "timestamp, index, power.draw [W]\n2024/05/01 12:00:00.100, 0, 300 W\n"
            "2024/05/01 12:00:00.000, 0, 301 W\n",
            "go backwards or repeat at line 3",
        ),
        (
            "timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, 300 W\n"
            "2024/05/01 12:00:00.100, 0, [N/A]\n",
            r"column 'gpu0' has 1 missing/NaN value\(s\), first at line 3",
        ),
        (
            "timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, 300000 W\n"
            "2024/05/01 12:00:00.100, 0, 300000 W\n",
            "median of 300000 W.*unit wrong",
        ),
        (
            "timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, -3 W\n"
            "2024/05/01 12:00:00.100, 0, 300 W\n",
            "negative power -3 W at line 2",
        ),
    ],
)
def test_bad_nvidia_smi_is_rejected(tmp_path, text, match):
    path = tmp_path / "smi.csv"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=match):
        read_trace(path, format="nvidia-smi")


def write_powertrace(path, t, mw, temp, *, runs=("r1",), timestamps=True):
    rows = ["run_id,timestamp,time_relative_s,gpu_id,power_w,temperature_c"]
    for run in runs:
        for k, stamp in enumerate(t):
            rel = (stamp - t[0]).total_seconds()
            for g in range(mw.shape[1]):
                ts = stamp.isoformat() if timestamps else ""
                rows.append(f"{run},{ts},{rel!r},{g},{float(mw[k, g]) / 1000!r},{temp[k, g]}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_powertrace_returns_the_written_real_samples(tmp_path, real_gpus):
    t, mw, temp = real_gpus
    trace = read_trace(write_powertrace(tmp_path / "pt.csv", t, mw, temp), tz="UTC")
    assert trace.meta.format == "powertrace" and trace.meta.extra["run_id"] == "r1"
    np.testing.assert_array_equal(trace.power_w.to_numpy(), mw / 1000)
    assert (trace.power_w.index == t.tz_localize("UTC")).all()
    np.testing.assert_array_equal(trace.channels["gpu3_temperature_c"], temp[:, 3])


def test_powertrace_relative_time_only(tmp_path, real_gpus):
    t, mw, temp = real_gpus
    trace = read_trace(write_powertrace(tmp_path / "pt.csv", t, mw, temp, timestamps=False))
    assert trace.power_w.index.name == "elapsed" and trace.power_w.index[0] == pd.Timedelta(0)
    t_s = (t - t[0]).total_seconds().to_numpy()
    assert trace.energy_wh() == pytest.approx(np.trapezoid(mw.sum(axis=1) / 1000, t_s) / 3600, rel=1e-9)


def test_powertrace_several_runs_need_a_choice(tmp_path, real_gpus):
    t, mw, temp = real_gpus
    path = write_powertrace(tmp_path / "pt.csv", t[:10], mw[:10], temp[:10], runs=("a", "b"))
    with pytest.raises(TraceFormatError, match=r"pt.csv: holds 2 runs \(a, b.*run_id="):
        read_trace(path)
    assert read_trace(path, run_id="b").meta.extra["run_id"] == "b"


def test_powertrace_renamed_column_is_named(tmp_path):
    path = tmp_path / "pt.csv"
    path.write_text("run_id,timestamp,gpu_id,power_mw\nr,2024-01-01T00:00:00,0,300\n")
    with pytest.raises(TraceFormatError, match=r"missing column\(s\) \['power_w'\]"):
        read_trace(path, format="powertrace")
