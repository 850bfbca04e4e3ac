"""Trace readers and resample given hostile input: non-finite samples, glitches, binary and
damaged files, bad time zones and arguments, and daylight-saving changes read right (issue 14,
classes 4 and 7).

The files are small hand-written logs in each tool's layout; the expected UTC times are
computed by hand from the zone rules (America/New_York: EDT = UTC-4 until 2024-11-03 02:00
local, EST = UTC-5 after).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from aiload import resample
from aiload.errors import InputError, InputWarning, TraceFormatError
from aiload.traces import read_trace

SMI_HEADER = "timestamp, index, power.draw [W]\n"


def smi(path, watts, start="2024/01/01 00:00:00", step_s=1):
    t0 = pd.Timestamp(start.replace("/", "-"))
    rows = [
        f"{(t0 + pd.Timedelta(seconds=step_s * i)).strftime('%Y/%m/%d %H:%M:%S.000')}, 0, {w} W\n"
        for i, w in enumerate(watts)
    ]
    path.write_text(SMI_HEADER + "".join(rows))
    return path


def test_an_infinite_nvidia_smi_sample_is_refused_naming_file_column_and_line(tmp_path):
    path = smi(tmp_path / "inf.csv", [100, "inf", 100])
    with pytest.raises(TraceFormatError, match=r"inf\.csv: column 'gpu0' has 1 infinite value\(s\), first inf at line 3"):
        read_trace(path)


def test_an_infinite_powertrace_sample_is_refused(tmp_path):
    rows = ["run_id,timestamp,time_relative_s,gpu_id,power_w"]
    rows += [f"r1,2024-01-01T00:00:0{i},{i},0,{'-inf' if i == 2 else 100}" for i in range(5)]
    (tmp_path / "pt.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(TraceFormatError, match=r"pt\.csv: column 'gpu0'.*first -inf at line 4"):
        read_trace(tmp_path / "pt.csv")


def test_one_sample_a_million_times_the_median_warns_with_its_line(tmp_path):
    watts = [100.0] * 20
    watts[6] = 1.5e8  # 1.5e6 x the median of 100 W
    path = smi(tmp_path / "glitch.csv", watts)
    with pytest.warns(InputWarning, match=r"glitch\.csv: power \[W\]: a sample of 1\.5e\+08 at line 8 is 1\.5e\+06 times the median 100"):
        trace = read_trace(path)
    assert trace.power_w["gpu0"].max() == 1.5e8  # warned, not altered


def test_an_ordinary_peak_does_not_warn(tmp_path):
    path = smi(tmp_path / "ok.csv", [100.0] * 10 + [700.0] + [100.0] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        read_trace(path)


@pytest.mark.parametrize("fmt", ["nvidia-smi", "wattameter", "powertrace", "mlperf-mllog", "mlperf-spl"])
def test_a_binary_file_forced_to_a_text_format_names_file_and_format(tmp_path, fmt):
    png = tmp_path / "figure.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    with pytest.raises(TraceFormatError, match=rf"figure\.png: is a binary file .*not a '{fmt}' text log"):
        read_trace(png, format=fmt)


@pytest.mark.parametrize("fmt", [None, "nlr-parquet", "aiload"])
def test_a_damaged_parquet_file_names_the_file(tmp_path, fmt):
    good = tmp_path / "good.parquet"
    pd.DataFrame({"power[W]": np.arange(50.0)}).to_parquet(good)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(TraceFormatError, match=r"cut\.parquet: .*(not a readable Parquet|cannot be read as)"):
        read_trace(cut, format=fmt)


@pytest.mark.parametrize(
    ("tz", "match"),
    [("Mars/Olympus", r"unknown time zone 'Mars/Olympus'"), (5, r"got 5 \(int\); expected a time zone name")],
)
def test_a_bad_time_zone_is_an_input_error_before_reading(tmp_path, tz, match):
    path = smi(tmp_path / "ok.csv", [100.0] * 5)
    with pytest.raises(InputError, match=r"read_trace\(tz=\): " + match):
        read_trace(path, tz=tz)


def test_a_local_clock_falling_back_from_daylight_saving_is_read_in_order(tmp_path):
    # EDT -> EST on 2024-11-03: local 01:30 .. 01:50 happen twice. Samples every 10 min from
    # 05:30 UTC (01:30 EDT) to 06:40 UTC (01:40 EST) as a local clock writes them.
    local = ["01:30", "01:40", "01:50", "01:00", "01:10", "01:20", "01:30", "01:40"]
    rows = [f"2024/11/03 {hm}:00.000, 0, 100 W\n" for hm in local]
    (tmp_path / "dst.csv").write_text(SMI_HEADER + "".join(rows))
    trace = read_trace(tmp_path / "dst.csv", tz="America/New_York")
    expected = pd.date_range("2024-11-03 05:30", periods=8, freq="10min", tz="UTC")
    assert (trace.power_w.index == expected).all()


def test_a_local_time_inside_the_skipped_spring_hour_is_refused(tmp_path):
    rows = [f"2024/03/10 {hm}:00.000, 0, 100 W\n" for hm in ("01:50", "02:10", "03:10")]
    (tmp_path / "spring.csv").write_text(SMI_HEADER + "".join(rows))
    with pytest.raises(TraceFormatError, match=r"spring\.csv: local times in 'America/New_York' cannot be placed on UTC"):
        read_trace(tmp_path / "spring.csv", tz="America/New_York")


def test_iso_stamps_whose_utc_offset_changes_at_dst_are_read(tmp_path):
    # -04:00 until the change, -05:00 after: the same instants as above
    stamps = ["2024-11-03T01:30:00-04:00", "2024-11-03T01:50:00-04:00",
              "2024-11-03T01:10:00-05:00", "2024-11-03T01:30:00-05:00"]
    rows = ["run_id,timestamp,time_relative_s,gpu_id,power_w"]
    rows += [f"r1,{s},{i},0,100" for i, s in enumerate(stamps)]
    (tmp_path / "pt.csv").write_text("\n".join(rows) + "\n")
    trace = read_trace(tmp_path / "pt.csv")
    expected = pd.DatetimeIndex(["2024-11-03 05:30", "2024-11-03 05:50", "2024-11-03 06:10",
                                 "2024-11-03 06:30"], tz="UTC")
    assert (trace.power_w.index == expected).all()


def test_iso_stamps_mixing_offsets_and_none_are_refused(tmp_path):
    rows = ["run_id,timestamp,time_relative_s,gpu_id,power_w",
            "r1,2024-11-03T01:30:00-04:00,0,0,100", "r1,2024-11-03T01:40:00,1,0,100"]
    (tmp_path / "pt.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(TraceFormatError, match=r"mixes times with and without a UTC offset \(line 3"):
        read_trace(tmp_path / "pt.csv")


@pytest.fixture()
def samples_w():
    t = pd.date_range("2024-01-01", periods=20, freq="1s", tz="UTC")
    return pd.Series(np.linspace(100.0, 290.0, 20), index=t, name="p_w").rename_axis("time")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"freq": None}, r"freq=None is not a time step"),
        ({"freq": float("nan")}, r"freq=nan is not a time step"),
        ({"freq": "inf"}, r"freq='inf' is not a time step"),
        ({"freq": "5s", "max_gap": "-3s"}, r"max_gap='-3s' is not a positive duration"),
        ({"freq": "5s", "max_gap": "soon"}, r"max_gap='soon' is not a positive duration"),
        ({"freq": "5s", "origin": "yesterday-ish"}, r"origin='yesterday-ish' is not 'start', 'epoch' or a timestamp"),
        ({"freq": "5s", "kind": ["means"]}, r"kind=\['means'\] is not one of"),
        ({"freq": "5s", "fill": float("nan")}, r"fill=nan is not one of"),
    ],
)
def test_bad_resample_arguments_name_the_argument(samples_w, kwargs, match):
    with pytest.raises(InputError, match=match):
        resample(samples_w, **kwargs)


def test_resample_refuses_infinite_data(samples_w):
    bad = samples_w.copy()
    bad.iloc[4] = np.inf
    with pytest.raises(InputError, match=r"1 infinite value\(s\), first in column 'p_w' at 2024-01-01 00:00:04"):
        resample(bad, "5s")


def test_resample_refuses_text_data(samples_w):
    frame = samples_w.to_frame()
    frame["host"] = "node1"
    with pytest.raises(InputError, match=r"column 'host' holds object values; expected power as numbers"):
        resample(frame, "5s")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"combine_step_s": float("inf")}, r"combine_step_s: expected a finite number >= 0\.001 and <= 3600 \[s\], got inf"),
        ({"combine_step_s": 1e-9}, r"combine_step_s: .*got 1e-09"),
        ({"rapl_max_energy_range_uj": float("nan")}, r"rapl_max_energy_range_uj: expected a finite number > 0 \[uJ\], got nan"),
        ({"format": ["nvidia-smi"]}, r"read_trace: format=\['nvidia-smi'\] is not one of"),
    ],
)
def test_bad_reader_options_name_the_option(data_dir, kwargs, match):
    logs = sorted((data_dir / "wattameter-example-logs").glob("*.log"))
    with pytest.raises(InputError, match=match):
        read_trace(logs, **kwargs)


PT_HEADER = "run_id,timestamp,time_relative_s,gpu_id,power_w\n"


def test_a_powertrace_timestamp_missing_on_some_rows_is_named_not_dropped(tmp_path):
    # before: one empty stamp switched the whole file to elapsed time, losing absolute time
    rows = [f"r1,{'' if i == 2 else f'2024-05-01T12:00:0{i}'},{i},0,{300 + i}\n" for i in range(5)]
    path = tmp_path / "pt.csv"
    path.write_text(PT_HEADER + "".join(rows))
    with pytest.raises(TraceFormatError, match=r"pt\.csv: column 'timestamp' is empty at line 4 "
                                               r"\(1 of 5 rows\) but filled elsewhere"):
        read_trace(path)


def test_a_powertrace_without_any_time_names_both_columns(tmp_path):
    path = tmp_path / "pt.csv"
    path.write_text("run_id,timestamp,gpu_id,power_w\n" + "".join(f"r1,,0,{300 + i}\n" for i in range(3)))
    with pytest.raises(TraceFormatError, match=r"column 'timestamp' is empty and there is no "
                                               r"'time_relative_s' column"):
        read_trace(path)


def test_a_wattameter_log_cut_mid_line_is_refused_not_read_as_a_small_reading(tmp_path):
    # '75' is what is left of '75012' mW: before, it was read as 0.075 W
    path = tmp_path / "nvml_wattameter_n1.log"
    path.write_text(
        "# 2025-10-07_09:38:40.617145 - Power data for run 1\n"
        "# timestamp                  reading-time[ns] gpu-0[mW] gpu-0[C]\n"
        + "".join(f"  2025-10-07_09:38:4{i}.000000 100 {75000 + i} 41\n" for i in range(5))
        + "  2025-10-07_09:38:45.000000 100 75"
    )
    with pytest.raises(TraceFormatError, match=r"line 8 has 3 fields but the header names 4; the "
                                               r"line was cut short"):
        read_trace(path)


def test_two_rapl_counter_readings_are_named_as_too_few(tmp_path):
    path = tmp_path / "rapl_wattameter_n1.log"
    path.write_text(
        "# 2025-10-07_09:38:40.617145 - Power data for run 1\n"
        "# timestamp                  reading-time[ns] cpu-0[uJ] cpu-0[W]\n"
        "  2025-10-07_09:38:40.000000 100 0 100\n  2025-10-07_09:38:41.000000 100 100000000 100\n"
    )
    with pytest.raises(TraceFormatError, match=r"rapl_wattameter_n1\.log: 2 RAPL counter "
                                               r"reading\(s\) give 1 power sample\(s\)"):
        read_trace(path)


@pytest.mark.parametrize(("detail", "match"), [
    (':::MLLOG {"key": "power_begin", "value": "05-17-2024 05:38:31.000"\n',
     r"mlperf_log_detail\.txt: line 1 is not a valid ':::MLLOG \{json\}' record"),
    (':::MLLOG {"key": "power_begin", "value": "2024-05-17 05:38:31"}\n'
     ':::MLLOG {"key": "power_end", "value": "05-17-2024 05:38:33.000"}\n',
     r"mlperf_log_detail\.txt: power_begin '2024-05-17 05:38:31' / power_end .* are not "
     r"'MM-DD-YYYY HH:MM:SS.fff' times.*window='all'"),
])
def test_a_bad_loadgen_detail_log_is_named_not_the_spl_file(tmp_path, detail, match):
    (tmp_path / "mlperf_log_detail.txt").write_text(detail)
    path = tmp_path / "spl.txt"
    path.write_text("".join(
        f"Time,05-17-2024 05:38:3{i}.000,Watts,{5000 + i},Volts,230.0,Amps,10.0,PF,0.99,Mark,r\n"
        for i in range(5)))
    with pytest.raises(TraceFormatError, match=match):
        read_trace(path)
    assert read_trace(path, window="all").power_w["node"].tolist() == [5000.0 + i for i in range(5)]


def test_a_format_typo_suggests_the_nearest(tmp_path):
    path = smi(tmp_path / "a.csv", [100, 110, 120])
    with pytest.raises(InputError, match=r"format='nvidia_smi' is not one of .*leave it out to "
                                         r"detect the format\. Did you mean 'nvidia-smi'\?"):
        read_trace(path, format="nvidia_smi")


def test_a_byte_order_mark_does_not_hide_the_format(tmp_path):
    # Excel and Windows tools start a UTF-8 CSV with a BOM; before, a PowerTrace CSV with one
    # was 'cannot tell the format from its first line'
    path = tmp_path / "pt.csv"
    path.write_text("\ufeff" + PT_HEADER
                    + "".join(f"r1,2024-05-01T12:00:0{i},{i},0,{300 + i}\n" for i in range(5)),
                    encoding="utf-8")
    trace = read_trace(path)
    assert trace.meta.format == "powertrace"
    assert trace.power_w["gpu0"].tolist() == [300.0, 301.0, 302.0, 303.0, 304.0]
    log = tmp_path / "nvml_wattameter_n1.log"
    log.write_text(
        "\ufeff# 2025-10-07_09:38:40.617145 - Power data for run 1\n"
        "# timestamp                  reading-time[ns] gpu-0[mW]\n"
        + "".join(f"  2025-10-07_09:38:4{i}.000000 100 {75000 + i}\n" for i in range(3)),
        encoding="utf-8")
    assert read_trace(log).power_w["gpu0"].tolist() == [75.0, 75.001, 75.002]
