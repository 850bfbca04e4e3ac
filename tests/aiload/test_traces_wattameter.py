"""WattAMeter logs: the real 4 x H100 example logs in data_dir/wattameter-example-logs.

Expected values: the folder's SOURCE.md (idle ~74-76 W, loaded ~650-680 W per GPU, means
226-249 W) and a second parse of the same text done here with plain ``str.split``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aiload.errors import TraceFormatError
from aiload.traces import read_trace
from aiload.traces.wattameter import RAPL_MAX_ENERGY_RANGE_UJ, rapl_power_w

FOLDER = "wattameter-example-logs"


def split_parse(path):
    """Second parser: header names, times [s since first], values (float) by str.split."""
    lines = path.read_text().splitlines()
    names = lines[2].lstrip("#").split()
    rows = [ln.split() for ln in lines if ln.strip() and not ln.startswith("#")]
    t = pd.to_datetime([r[0] for r in rows], format="%Y-%m-%d_%H:%M:%S.%f").asi8
    values = np.array([[float(x) for x in r[2:]] for r in rows])
    return names[2:], (t - t[0]) / 1e9, values


def test_nvml_gpu_idle_and_loaded_power_match_source(data_dir):
    trace = read_trace(data_dir / FOLDER / "nvml_wattameter.log")
    p = trace.power_w
    assert list(p.columns) == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert trace.meta.format == "wattameter" and trace.meta.n_devices == 4
    assert len(p) == 140
    idle, loaded = p.iloc[:5].to_numpy(), p.iloc[-10:].to_numpy()
    assert idle.min() > 73 and idle.max() < 77  # SOURCE.md: idle ~ 74-76 W each
    assert loaded.min() > 645 and loaded.max() < 685  # ~ 650-680 W
    assert p.min().min() == pytest.approx(73.4, abs=0.05)  # "min ~ 73.4 W"
    assert p.max().max() == pytest.approx(680, abs=0.5)  # "max ~ 680 W"
    means = p.mean()
    assert round(means.min()) == 226 and round(means.max()) == 249  # "mean 226-249 W"
    assert trace.channels["gpu0_temperature_c"].between(41, 67).all()


def test_nvml_values_and_energy_agree_with_a_second_parse(data_dir):
    path = data_dir / FOLDER / "nvml_wattameter.log"
    names, t_s, values = split_parse(path)
    trace = read_trace(path)
    mw = values[:, [names.index(f"gpu-{i}[mW]") for i in range(4)]]
    np.testing.assert_allclose(trace.power_w.to_numpy(), mw / 1000, rtol=1e-15)
    expected_wh = np.trapezoid(mw.sum(axis=1) / 1000, t_s) / 3600
    assert trace.energy_wh() == pytest.approx(expected_wh, rel=1e-9)
    assert trace.meta.sampling_interval_s == pytest.approx(0.10011, abs=1e-5)  # SOURCE.md median
    assert trace.meta.extra["tz_assumed"].startswith("UTC")
    assert trace.power_w.index[0] == pd.Timestamp("2025-10-07 09:38:40.623626", tz="UTC")


def test_timezone_is_applied_when_given(data_dir):
    trace = read_trace(data_dir / FOLDER / "nvml_wattameter.log", tz="America/Denver")
    # 2025-10-07 is daylight time in Denver: UTC-6
    assert trace.power_w.index[0] == pd.Timestamp("2025-10-07 15:38:40.623626", tz="UTC")
    assert "tz_assumed" not in trace.meta.extra


def test_rapl_power_from_counters_matches_wattameters_own_columns(data_dir):
    path = data_dir / FOLDER / "rapl_wattameter.log"
    trace = read_trace(path)
    assert list(trace.power_w.columns) == ["cpu0", "cpu1"] and len(trace.power_w) == 139
    for cpu in ("cpu0", "cpu1"):
        np.testing.assert_allclose(
            trace.power_w[cpu], trace.channels[f"{cpu}_logged_power_w"], rtol=1e-4
        )
        np.testing.assert_allclose(
            trace.channels[f"{cpu}_core_power_w"],
            trace.channels[f"{cpu}_core_logged_power_w"],
            atol=1e-3,
        )
    # SOURCE.md: package power 54-142 W per socket
    assert trace.power_w.min().min() > 54 - 1 and trace.power_w.max().max() < 142 + 1


def test_rapl_power_times_interval_is_the_counter_difference(data_dir):
    path = data_dir / FOLDER / "rapl_wattameter.log"
    names, t_s, values = split_parse(path)
    trace = read_trace(path)
    counter = values[:, names.index("cpu-1[uJ]")]
    energy_j = float(np.sum(trace.power_w["cpu1"].to_numpy() * np.diff(t_s)))
    assert energy_j == pytest.approx((counter[-1] - counter[0]) / 1e6, rel=1e-9)
    # samples sit at the midpoints of the read intervals
    mid = pd.Timestamp("2025-10-07 09:38:40.623688", tz="UTC") + pd.Timedelta(np.diff(t_s)[0] / 2, "s")
    assert abs(trace.power_w.index[0] - mid) < pd.Timedelta("1us")


def test_rapl_counter_wrap_is_unwrapped(data_dir, tmp_path):
    """A constructed wrap: the real cpu-0 counter taken modulo a small range."""
    src = data_dir / FOLDER / "rapl_wattameter.log"
    names, t_s, values = split_parse(src)
    real = read_trace(src)
    e0 = values[:, names.index("cpu-0[uJ]")]
    range_uj = 2**32
    # offset so the counter passes range_uj in the middle of the log
    wrapped = (e0 - e0[0] + range_uj - (e0[70] - e0[0])) % range_uj
    assert (np.diff(wrapped) < 0).sum() == 1
    text = src.read_text().splitlines()
    out = text[:3]
    col = names.index("cpu-0[uJ]") + 2
    for line, w in zip(text[3:], wrapped):
        parts = line.split()
        parts[col] = str(int(w))
        out.append("  " + " ".join(parts))
    path = tmp_path / "rapl_wattameter.log"
    path.write_text("\n".join(out) + "\n")
    trace = read_trace(path, rapl_max_energy_range_uj=range_uj)
    np.testing.assert_allclose(trace.power_w["cpu0"], real.power_w["cpu0"], rtol=1e-9)
    # with the default (larger) range the unwrapped step is absurd, and the error says why
    with pytest.raises(TraceFormatError, match=r"cpu-0\[uJ\]' jumps .*lines 7[34] and 7[45].*rapl_max_energy_range_uj"):
        read_trace(path)
    assert rapl_power_w(np.array([RAPL_MAX_ENERGY_RANGE_UJ - 1e6, 1e6]), np.array([0.0, 1.0])) == pytest.approx([2.0])


def test_nvml_and_rapl_files_combine_into_one_node(data_dir):
    """SOURCE.md: node ~0.41-0.60 kW while idle, ~2.9 kW loaded (its sum adds the ~0-5 W
    core sub-domain on top of the package; aiload keeps that in channels)."""
    folder = data_dir / FOLDER
    trace = read_trace(folder)
    assert list(trace.power_w.columns) == ["gpu0", "gpu1", "gpu2", "gpu3", "cpu0", "cpu1"]
    assert trace.meta.n_nodes == 1 and trace.meta.n_devices == 6
    assert trace.meta.extra["grid_step_s"] == pytest.approx(0.1)
    node = trace.per_node_w()
    assert node.shape[1] == 1
    assert 410 < node.iloc[:5].to_numpy().min() and node.iloc[:5].to_numpy().max() < 600
    assert node.iloc[-5:].to_numpy().mean() == pytest.approx(2900, abs=50)
    # each device keeps its energy over the common span (second method: refine and trapezoid)
    step = trace.meta.extra["grid_step_s"]
    a = trace.power_w.index[0]
    b = a + pd.Timedelta(len(trace.power_w) * step, "s")
    for name in ("nvml_wattameter.log", "rapl_wattameter.log"):
        part = read_trace(folder / name)
        t = (part.power_w.index - a).total_seconds().to_numpy()
        end = (b - a).total_seconds()
        x = np.concatenate([[0.0], t[(t > 0) & (t < end)], [end]])
        for col in part.power_w.columns:
            exact = np.trapezoid(np.interp(x, t, part.power_w[col].to_numpy()), x)
            assert trace.power_w[col].sum() * step == pytest.approx(exact, rel=1e-9)


def _write(path, header, rows):
    body = "# 2025-10-07_09:38:40.617145 - Power data for run 1\n" + header + "\n"
    path.write_text(body + "".join(f"  {r}\n" for r in rows))
    return path


HEADER = "# timestamp                  reading-time[ns] gpu-0[mW] gpu-1[mW]"


@pytest.mark.parametrize(
    ("header", "rows", "match"),
    [
        (HEADER, [], "no data lines"),
        (
            HEADER.replace("gpu-1[mW]", "gpu-1[kW]"),
            ["2025-10-07_09:38:40.6 1 75000 74000", "2025-10-07_09:38:40.7 1 75000 74000"],
            r"\['gpu-1\[kW\]'\] are not WattAMeter channels",
        ),
        (
            HEADER,
            ["2025-10-07_09:38:40.7 1 75000 74000", "2025-10-07_09:38:40.6 1 75000 74000"],
            r"go backwards or repeat at line 4",
        ),
        (
            HEADER,
            ["2025-10-07_09:38:40.6 1 75000 74000", "2025-10-07_09:38:40.7 1 nan 74000"],
            r"column 'gpu0' has 1 missing/NaN value\(s\), first at line 4",
        ),
        (
            HEADER,
            ["2025-10-07_09:38:40.6 1 75000 74000", "2025-10-07_09:38:40.7 1 75000 -74000"],
            r"column 'gpu1' has a negative power -74 W at line 4",
        ),
        (
            HEADER,  # watts written under an [mW] header
            ["2025-10-07_09:38:40.6 1 75.0 74.0", "2025-10-07_09:38:40.7 1 75.1 74.1"],
            r"median below 1 W after converting from mW",
        ),
        (
            HEADER,  # microwatts under an [mW] header
            ["2025-10-07_09:38:40.6 1 75000000 74000000", "2025-10-07_09:38:40.7 1 75000000 74000000"],
            r"median of 75000 W after converting from mW.*unit wrong",
        ),
    ],
)
def test_bad_wattameter_logs_are_rejected(tmp_path, header, rows, match):
    path = _write(tmp_path / "nvml_wattameter.log", header, rows)
    with pytest.raises(TraceFormatError, match=match) as info:
        read_trace(path, format="wattameter")
    assert "nvml_wattameter.log" in str(info.value)


def test_empty_file_is_rejected(tmp_path):
    path = tmp_path / "nvml_wattameter.log"
    path.write_text("")
    with pytest.raises(TraceFormatError, match="nvml_wattameter.log: the file is empty"):
        read_trace(path)
