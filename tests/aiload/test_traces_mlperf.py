"""MLPerf power logs read from the real files (data_dir: tests/data or the full set).

Expected numbers come from the folders' SOURCE.md tables (computed there independently of
aiload) or from a second, regex-based parse of the same file done here.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from aiload.errors import TraceFormatError
from aiload.traces import read_trace

TRAIN = "mlperf-training-v4.0-smc-power/smc-ac-power/results"
LORA8 = f"{TRAIN}/8xSMC-H100-SXM-80GB/llama2_70b_lora/power/result_5742-240517053836692164828_10"
LORA1 = f"{TRAIN}/1xSMC-H100-SXM-80GB/llama2_70b_lora/power/result_5027-240510020224961918558_1"
GPT3 = f"{TRAIN}/64xSMC-H100-SXM-80GB/gpt3/power/result_5848-240517221859825376616_2"
INFER = "mlperf-inference-v4.1-h200-power/closed/NVIDIA/results/H200-SXM-141GBx8_TRT_MaxQ"
_LINE = re.compile(r'"time_ms": (\d+), "event_type": "POINT_IN_TIME", "key": "power_reading", "value": (\d+)')


def regex_samples(path):
    """Second parser: times [s] and power [W] of the power_reading lines, by regex."""
    found = _LINE.findall(path.read_text())
    t_ms = np.array([int(a) for a, _ in found], dtype=np.int64)
    return (t_ms - t_ms[0]) / 1000.0, np.array([float(b) for _, b in found])


def exact_integral(t_s, p_w, a_s, b_s):
    """Integral of the piecewise-linear samples over [a, b] [W s], by refining the grid."""
    inner = t_s[(t_s > a_s) & (t_s < b_s)]
    x = np.concatenate([[a_s], inner, [b_s]])
    return np.trapezoid(np.interp(x, t_s, p_w), x)


def test_lora_8_node_per_node_mean_matches_source(data_dir):
    """SOURCE.md: per-node mean 5.74-5.86 kW, 144-159 readings per node, max 6,464 W."""
    folder = data_dir / LORA8
    means, maxima = [], []
    for node in range(1, 9):
        trace = read_trace(folder / f"node_{node}.txt")
        assert trace.meta.format == "mlperf-mllog"
        assert 144 <= len(trace.power_w) <= 159
        means.append(trace.power_w.iloc[:, 0].mean())
        maxima.append(trace.power_w.iloc[:, 0].max())
    assert 5735 <= min(means) and max(means) < 5865  # 5.74-5.86 kW as printed (rounded)
    assert max(maxima) == 6464


def test_single_file_energy_is_the_integral_of_its_samples(data_dir):
    path = data_dir / LORA8 / "node_1.txt"
    trace = read_trace(path)
    t_s, p_w = regex_samples(path)
    np.testing.assert_array_equal(trace.power_w["node_1"].to_numpy(), p_w)
    assert trace.energy_wh() == pytest.approx(np.trapezoid(p_w, t_s) / 3600, rel=1e-9)
    assert trace.power_w.index.tz is not None and str(trace.power_w.index.tz) == "UTC"
    # the first reading's epoch ms, converted by hand: 1715902391237 ms
    assert trace.power_w.index[0] == pd.Timestamp("2024-05-16 23:33:11.237", tz="UTC")


def test_run_directory_combines_nodes_with_energy_conserved(data_dir):
    folder = data_dir / LORA8
    trace = read_trace(folder)
    meta = trace.meta
    assert (meta.n_nodes, meta.hardware, meta.workload) == (8, "8xH100-SXM", "llama2_70b_lora")
    assert list(trace.power_w.columns) == [f"node_{i}" for i in range(1, 9)]
    assert trace.power_w.index.freq is not None
    step_s = trace.meta.extra["grid_step_s"]
    a = (trace.power_w.index[0].value) / 1e9
    b = a + len(trace.power_w) * step_s
    for node in trace.power_w.columns:
        t_s, p_w = regex_samples(folder / f"{node}.txt")
        t0 = read_trace(folder / f"{node}.txt").power_w.index[0].value / 1e9
        expected = exact_integral(t_s, p_w, a - t0, b - t0)
        got = trace.power_w[node].sum() * step_s
        assert got == pytest.approx(expected, rel=1e-9)
    assert trace.per_node_w().equals(trace.power_w)


def test_gpt3_64_nodes_total_energy_and_mean_match_source(data_dir):
    """SOURCE.md: total_power.txt 415.22 kWh; sum of node means 438.3 kW."""
    trace = read_trace(data_dir / GPT3)
    assert trace.meta.n_nodes == 64 and trace.power_w.shape[1] == 64
    # the common span drops < 2 s per node at each end: well inside 0.5 %
    assert trace.energy_wh() / 1000 == pytest.approx(415.22, rel=5e-3)
    assert trace.total_w().mean() / 1000 == pytest.approx(438.3, rel=2e-3)
    dropped = sum(trace.meta.extra["dropped_energy_wh"].values())
    per_file_wh = sum(
        np.trapezoid(p_w, t_s) / 3600
        for t_s, p_w in map(regex_samples, (data_dir / GPT3).glob("node_*.txt"))
    )
    # what the grid holds plus what fell outside the common span is all the files' energy
    assert trace.energy_wh() + dropped == pytest.approx(per_file_wh, rel=1e-9)
    assert 0 < dropped < 0.01 * per_file_wh


def test_one_node_run_first_and_last_reading(data_dir):
    """SOURCE.md: 818 readings, first 2,845 W, last 2,387 W.

    Line 275 repeats line 274 exactly (same time_ms, same value): the reader keeps one.
    """
    trace = read_trace(data_dir / LORA1)
    p = trace.power_w["node_0"]
    assert (len(p), p.iloc[0], p.iloc[-1]) == (817, 2845.0, 2387.0)
    assert trace.meta.extra["repeated_lines_dropped"] == [275]
    assert trace.meta.n_nodes == 1 and trace.meta.hardware == "8xH100-SXM"


@pytest.mark.parametrize(
    ("bench", "mean_w", "p5_w", "p95_w", "max_w"),
    [
        ("llama2-70b-99/Server", 6280, 6236, 6348, 6390),
        ("llama2-70b-99/Offline", 6153, 6115, 6200, 6219),
        ("mixtral-8x7b/Server", 6175, 6051, 6252, 6288),
        ("mixtral-8x7b/Offline", 6155, 6090, 6255, 6300),
    ],
)
def test_inference_spl_power_window_matches_source(data_dir, bench, mean_w, p5_w, p95_w, max_w):
    """SOURCE.md table: wall power inside power_begin -> power_end, rounded to 1 W."""
    trace = read_trace(data_dir / INFER / bench / "performance/run_1")
    p = trace.power_w["node"]
    assert trace.meta.format == "mlperf-spl" and trace.meta.hardware == "8xH200-SXM"
    assert p.mean() == pytest.approx(mean_w, abs=0.5)
    assert p.quantile(0.05) == pytest.approx(p5_w, abs=1)
    assert p.quantile(0.95) == pytest.approx(p95_w, abs=1)
    assert p.max() == pytest.approx(max_w, abs=0.5)
    assert "power_begin" in trace.meta.extra["window"]


def test_spl_whole_log_and_channels_sum_to_total(data_dir):
    """SOURCE.md: first sample 2,511.1 W = 849.2 + 862.1 + 799.8 W."""
    trace = read_trace(data_dir / INFER / "llama2-70b-99/Server/performance/run_1/spl.txt", window="all")
    assert len(trace.power_w) == 3056
    assert trace.power_w["node"].iloc[0] == pytest.approx(2511.1)
    ch = trace.channels[["ch1_power_w", "ch2_power_w", "ch3_power_w"]].sum(axis=1)
    np.testing.assert_allclose(ch.to_numpy(), trace.power_w["node"].to_numpy(), atol=0.15)
    assert trace.meta.extra["tz_assumed"].startswith("UTC")


#: 2024-05-17 05:38:36 UTC in epoch ms: the lines' times are offsets from a real log's time
_T0_MS = 1_715_924_316_000


def _line(t_ms, value, key="power_reading"):
    return (
        f':::MLLOG {{"namespace": "", "time_ms": {_T0_MS + t_ms}, "event_type": "POINT_IN_TIME", '
        f'"key": "{key}", "value": {value}, "metadata": ""}}\n'
    )


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("", "empty"),
        (_line(1000, 5000, key="power_readng") * 3, "no 'power_reading' lines"),
        (_line(2000, 5000) + _line(1000, 5100), r"go backwards or repeat at line 2"),
        (_line(1000, 5000) + _line(2000, "NaN"), r"column 'node_9'.*NaN.*line 2"),
        (_line(1000, 5000) + _line(1000, 5100), r"repeat at line 2"),
        (_line(1000, 5000) + _line(2000, -3), r"negative power -3 W at line 2"),
        (_line(1000, 5_000_000) + _line(2000, 5_100_000), r"median of 5.05e\+06 W.*mW"),
        (_line(1000, 5000) + "garbage\n", r"line 2 does not start with ':::MLLOG'"),
        (_line(1000, 5000) + _line(2000, 5000).replace(f"{_T0_MS + 2000}", '"soon"'),
         r"line 2: power_reading time_ms 'soon' is not a whole number; expected Unix epoch "
         r"milliseconds"),
        # seconds written where ms belong: 1,715,924,316 ms is 20 January 1970
        (_line(1000, 5000).replace(f"{_T0_MS + 1000}", "1715924316")
         + _line(2000, 5000).replace(f"{_T0_MS + 2000}", "1715924317"),
         r"line 1: power_reading time_ms = 1715924316 is 1970-01-20 20:38:44.316000\+00:00, "
         r"before 2000; expected Unix epoch milliseconds \(UTC\). Were seconds written"),
    ],
)
def test_bad_mllog_is_rejected_with_file_and_line(tmp_path, body, match):
    path = tmp_path / "node_9.txt"
    path.write_text(body)
    with pytest.raises(TraceFormatError, match=match) as info:
        read_trace(path, format="mlperf-mllog")
    assert "node_9.txt" in str(info.value)


def test_spl_bad_line_is_named(tmp_path):
    path = tmp_path / "spl.txt"
    path.write_text(
        "Time,07-17-2024 20:49:56.945,Watts,2511.1,Volts,239.1\n"
        "Time,07-17-2024 20:49:57.945,Volts,2516.6,Volts,239.1\n"
    )
    with pytest.raises(TraceFormatError, match=r"spl.txt: line 2 reads .*expected 'Time,"):
        read_trace(path)
