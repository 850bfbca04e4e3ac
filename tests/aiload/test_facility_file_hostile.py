"""Issue 26, hostile inputs: a facility Parquet written by FacilityLoad.to_parquet whose aiload
metadata, rows or columns were edited. read_facility raises a clear InputError (or repairs
what has one reading, with an InputWarning saying so); `aiload metrics FILE` prints one
paragraph and exits non-zero, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import aiload
from aiload.errors import InputError, InputWarning
from aiload.facility import read_facility
from scenarios.cli import main

STEP = pd.Timedelta("15min")  # the step the model is asked for: the reference for freq


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("facility")
    load = aiload.facility("inference-1mw", start=pd.Timestamp("2025-01-01", tz="UTC"),
                           end=pd.Timestamp("2025-01-01 06:00", tz="UTC"), freq="15min",
                           seed=1, progress=False)
    path = folder / "good.parquet"
    load.to_parquet(path)
    return folder, path, load


def _rewrite(folder, name, table, meta=None, raw=None, pandas_meta=True):
    """``table`` written to ``name`` with the aiload key set to ``meta`` (or ``raw`` bytes)."""
    extra = dict(table.schema.metadata or {}) if pandas_meta else {}
    extra[b"aiload"] = raw if raw is not None else json.dumps(meta).encode()
    path = folder / f"{name}.parquet"
    pq.write_table(table.replace_schema_metadata(extra), path)
    return path


def _meta(path):
    return json.loads(pq.read_metadata(path).metadata[b"aiload"])


def _frame_table(frame):
    return pa.Table.from_pandas(frame, preserve_index=True)


def _edit(case, folder, good):
    table, meta = pq.read_table(good), _meta(good)
    frame = table.to_pandas()
    if case == "freq changed":
        return _rewrite(folder, "f1", table, {**meta, "freq_s": 60})
    if case == "freq text":
        return _rewrite(folder, "f2", table, {**meta, "freq_s": "15min"})
    if case == "freq negative":
        return _rewrite(folder, "f3", table, {**meta, "freq_s": -900})
    if case == "freq NaN":  # json.dumps writes NaN, json.loads reads it back
        return _rewrite(folder, "f4", table, {**meta, "freq_s": float("nan")})
    if case == "freq true":
        return _rewrite(folder, "f5", table, {**meta, "freq_s": True})
    if case == "JSON broken":
        return _rewrite(folder, "j1", table, raw=b'{"kind": "facility", "freq_s": 9')
    if case == "JSON a list":
        return _rewrite(folder, "j2", table, raw=b"[1, 2]")
    if case == "kind removed":
        return _rewrite(folder, "k1", table, {k: v for k, v in meta.items() if k != "kind"})
    if case == "facility_kw removed":
        return _rewrite(folder, "c1", table.drop(["facility_kw"]), meta)
    if case == "facility_kw as text":
        frame["facility_kw"] = frame["facility_kw"].astype(str)
        return _rewrite(folder, "c2", _frame_table(frame), meta)
    if case == "facility_kw NaN":
        frame.iloc[5, frame.columns.get_loc("facility_kw")] = float("nan")
        return _rewrite(folder, "c3", _frame_table(frame), meta)
    if case == "index naive":
        frame.index = frame.index.tz_localize(None)
        return _rewrite(folder, "i1", _frame_table(frame), meta)
    if case == "index dropped":
        return _rewrite(folder, "i2", _frame_table(frame.reset_index(drop=True)), meta)
    if case == "row repeated":
        return _rewrite(folder, "r1", _frame_table(pd.concat([frame, frame.iloc[[3]]])), meta)
    if case == "row removed":
        return _rewrite(folder, "r2", _frame_table(frame.drop(frame.index[3])), meta)
    raise AssertionError(case)


REFUSED = {
    "freq changed": r"metadata says the step is 60 s \(1 min\) but its times are 15 min apart",
    "freq text": r"freq_s = '15min'; expected the series' step as a positive number of seconds",
    "freq negative": r"freq_s = -900; expected .* positive number of seconds",
    "freq NaN": r"freq_s = nan; expected",
    "freq true": r"freq_s = True; expected",
    "JSON broken": r"'aiload' metadata is not valid JSON .*edited or damaged",
    "JSON a list": r"'aiload' metadata is a JSON list, expected a JSON object",
    "kind removed": r"'aiload' metadata has no 'kind'",
    "facility_kw removed": r"no column 'facility_kw' \(the power at the meter \[kW\]\), which "
                           r"every facility file has; found \['component_kw', 'it_kw'",
    "facility_kw as text": r"column 'facility_kw' holds object values, expected numbers \[kW\]",
    "facility_kw NaN": r"column 'facility_kw' has 1 NaN or infinite value\(s\), the first at "
                       r"2025-01-01 01:15:00\+00:00",
    "index naive": r"time index has no time zone \(first 2025-01-01 00:00:00\); expected "
                   r"tz-aware.*tz_localize\('UTC'\)",
    "index dropped": r"labelled by int64 values \(first 0\), expected a tz-aware DatetimeIndex",
    "row repeated": r"the time 2025-01-01 00:45:00\+00:00 labels 2 rows",
    "row removed": r"not evenly spaced: 2025-01-01 00:30:00\+00:00 is followed by "
                   r"2025-01-01 01:00:00\+00:00 \(30 min later, against 15 min elsewhere\)",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_edited_file_is_refused_with_a_clear_message(written, case, capsys):
    folder, good, _ = written
    path = _edit(case, folder, good)
    with pytest.raises(InputError, match=REFUSED[case]) as caught:
        read_facility(path)
    assert str(path) in str(caught.value)
    # the command line: one paragraph on stderr, a non-zero exit, no traceback
    assert main(["metrics", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aiload metrics: error: read_facility: ")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_shuffled_rows_are_sorted_back_with_a_warning(written, tmp_path):
    folder, good, load = written
    frame = pq.read_table(good).to_pandas().sample(frac=1.0, random_state=3)
    assert not frame.index.is_monotonic_increasing
    path = _rewrite(tmp_path, "shuffled", _frame_table(frame), _meta(good))
    with pytest.warns(InputWarning, match="rows were not in time order.*sorted them by time"):
        back = read_facility(path)
    pd.testing.assert_frame_equal(back.power, load.power, check_freq=False)
    assert back.power.index.freq == STEP


def test_missing_freq_is_taken_from_the_times_with_a_warning(written, tmp_path):
    _, good, load = written
    meta = {k: v for k, v in _meta(good).items() if k != "freq_s"}
    path = _rewrite(tmp_path, "nofreq", pq.read_table(good), meta)
    with pytest.warns(InputWarning, match="no 'freq_s'; used the step of its times, 15 min"):
        back = read_facility(path)
    assert back.power.index.freq == STEP
    pd.testing.assert_frame_equal(back.power, load.power, check_freq=False)


def test_missing_freq_with_one_row_is_refused(written, tmp_path):
    _, good, _ = written
    meta = {k: v for k, v in _meta(good).items() if k != "freq_s"}
    frame = pq.read_table(good).to_pandas().iloc[:1]
    path = _rewrite(tmp_path, "one", _frame_table(frame), meta)
    with pytest.raises(InputError, match="no 'freq_s' and one row, so the step cannot be known"):
        read_facility(path)


def test_lost_index_record_uses_the_time_column_with_a_warning(written, tmp_path):
    _, good, load = written
    table = pq.read_table(good)  # the pandas record says which column is the index
    path = _rewrite(tmp_path, "nopandas", table, _meta(good), pandas_meta=False)
    with pytest.warns(InputWarning, match="used the 'time' column as the index"):
        back = read_facility(path)
    pd.testing.assert_frame_equal(back.power, load.power, check_freq=False, check_names=False)


def test_edited_job_log_is_refused(tmp_path):
    load = aiload.facility("colocation-10mw", nodes=64, start=pd.Timestamp("2025-01-01", tz="UTC"),
                           end=pd.Timestamp("2025-01-01 06:00", tz="UTC"), freq="15min", seed=1,
                           progress=False)
    path = tmp_path / "f.parquet"
    load.to_parquet(path, jobs=True)
    jobs = tmp_path / "f.jobs.parquet"
    jobs.write_bytes(jobs.read_bytes()[:100])  # cut short
    with pytest.raises(InputError, match=r"the job log .*f\.jobs\.parquet' cannot be read"):
        read_facility(path)


def test_untouched_file_reads_back_without_a_warning(written, recwarn):
    _, good, load = written
    back = read_facility(good)
    pd.testing.assert_frame_equal(back.power, load.power)
    assert not [w for w in recwarn if issubclass(w.category, InputWarning)]


def test_the_console_command_prints_no_traceback(written):
    folder, good, _ = written
    path = _edit("JSON broken", folder, good)
    done = subprocess.run([sys.executable, "-m", "scenarios.cli", "metrics", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "not valid JSON" in done.stderr
