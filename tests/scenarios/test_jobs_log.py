"""The job log (``facility.jobs.parquet``): opt-in, written with the documented columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aiload.facility import facility, read_facility
from scenarios.loader import ScenarioError, load_scenario
from scenarios.runner import run_scenario

ROOT = Path(__file__).resolve().parents[2]
# one day of the colocation site, no report: the smallest bundled run with batch jobs
SHORT = {"facility.end": "2025-01-02T00:00:00Z", "outputs.report": False}
STORED = ["arrival", "start", "end", "nodes", "workload", "stream", "replicate"]


def _documented_columns(page: Path) -> list[str]:
    """The column names in backticks of the ``facility.jobs.parquet`` row of a docs table."""
    row = next(line for line in page.read_text(encoding="utf-8").splitlines()
               if line.startswith("| `facility.jobs.parquet`"))
    return list(dict.fromkeys(re.findall(r"`([a-z_]+)`", row.split("|")[2])))  # first mentions


def test_a_default_run_writes_no_job_log(tmp_path):
    result = run_scenario("colocation-10mw", tmp_path / "out", overrides=SHORT, progress=False)
    assert "facility.jobs.parquet" not in result.files
    assert not (tmp_path / "out" / "facility.jobs.parquet").exists()
    assert read_facility(tmp_path / "out" / "facility.parquet").jobs.empty


def test_jobs_true_writes_the_documented_columns(tmp_path):
    out = tmp_path / "out"
    result = run_scenario("colocation-10mw", out, overrides={**SHORT, "outputs.jobs": True},
                          progress=False)
    assert "facility.jobs.parquet" in result.files
    schema = pq.read_schema(out / "facility.jobs.parquet")
    assert schema.names == STORED
    for name in ("arrival", "start", "end"):
        assert schema.field(name).type == pa.timestamp("ns", tz="UTC")
    assert schema.field("nodes").type == pa.int32() and schema.field("replicate").type == pa.int16()
    assert pa.types.is_dictionary(schema.field("workload").type)
    assert pa.types.is_dictionary(schema.field("stream").type)
    # the docs list the stored columns and the one put back on reading
    page = ROOT / "docs" / "getting-started.md"
    assert _documented_columns(page) == [*STORED, "queue_wait_s"]
    text = (ROOT / "docs" / "facility.md").read_text(encoding="utf-8")
    paragraph = text[text.index("**The job log**"):][:1500]
    assert all(f"`{name}`" in paragraph for name in [*STORED, "queue_wait_s"])

    # the same jobs as the library call, independently run; waits by hand from the times
    sc = load_scenario("colocation-10mw", overrides=SHORT)
    f = sc.facility
    expected = facility(f.preset, start=pd.Timestamp(f.start), end=pd.Timestamp(f.end),
                        freq=f.freq, seed=f.seed, progress=False, utilization=f.utilization,
                        **dict(f.overrides)).jobs
    back = read_facility(out / "facility.parquet").jobs
    assert len(back) == len(expected) > 0
    pd.testing.assert_frame_equal(back[STORED], expected[STORED])
    started = back["start"].notna()
    wait_s = ((back["start"] - back["arrival"]).astype("int64") / 1e9)[started]
    np.testing.assert_allclose(back["queue_wait_s"][started], wait_s, rtol=0, atol=1e-9)
    np.testing.assert_allclose(back["queue_wait_s"], expected["queue_wait_s"], rtol=0, atol=1e-6)
    assert back["queue_wait_s"][~started].isna().all()

    # a later default run into the same folder removes the earlier job log
    again = run_scenario("colocation-10mw", out, overrides=SHORT, progress=False)
    assert "facility.jobs.parquet" not in again.files
    assert not (out / "facility.jobs.parquet").exists()
    marker = json.loads((out / ".aiload-output.json").read_text())
    assert "facility.jobs.parquet" not in json.dumps(marker)


def test_jobs_without_the_power_file_is_refused_by_name():
    with pytest.raises(ScenarioError, match=r"jobs = true with facility_parquet = false.*"
                                             r"set facility_parquet = true or jobs = false"):
        load_scenario("colocation-10mw", overrides={"outputs.jobs": True,
                                                    "outputs.facility_parquet": False})


def test_to_parquet_writes_jobs_only_when_asked_and_never_pairs_a_stale_log(tmp_path):
    load = facility("colocation-10mw", start="2025-01-06 00:00+00:00", end="1D", freq="15min",
                    progress=False)
    path = tmp_path / "f.parquet"
    load.to_parquet(path, jobs=True)
    assert (tmp_path / "f.jobs.parquet").exists()
    assert len(read_facility(path).jobs) == len(load.jobs) > 0
    load.to_parquet(path)  # default: power only; the earlier log stays on disk ...
    assert (tmp_path / "f.jobs.parquet").exists()
    assert read_facility(path).jobs.empty  # ... but is not read as this file's
    assert json.loads(pq.read_schema(path).metadata[b"aiload"])["jobs_file"] is False


def test_a_streamed_file_is_never_paired_with_a_job_log_beside_it(tmp_path):
    kw = dict(start="2025-01-06 00:00+00:00", end="6h", freq="15min", progress=False)
    path = tmp_path / "f.parquet"
    facility("colocation-10mw", **kw).to_parquet(path, jobs=True)  # leaves f.jobs.parquet
    streamed = facility("colocation-10mw", stream_to=path, **kw)
    assert streamed.power is None and len(streamed.jobs) > 0
    back = read_facility(path)
    assert (tmp_path / "f.jobs.parquet").exists() and back.jobs.empty
    assert len(back.power) == 6 * 4


def _short_load():
    return facility("colocation-10mw", start="2025-01-06 00:00+00:00", end="6h", freq="15min",
                    progress=False)


@pytest.mark.parametrize("theirs", ["bytes", "parquet", "wrong_types"])
def test_the_job_log_never_replaces_a_file_aiload_did_not_write(tmp_path, theirs):
    from aiload.outputs import OutputError

    load = _short_load()
    log = tmp_path / "f.jobs.parquet"
    if theirs == "bytes":
        log.write_bytes(b"someone else's notes")
    elif theirs == "parquet":  # a user's table that shares two column names with a job log
        pd.DataFrame({"arrival": pd.to_datetime(["2025-01-01"], utc=True),
                      "nodes": [3]}).to_parquet(log)
    else:  # the job-log columns, but nodes/replicate as int64: pandas' default, not aiload's
        stored = load.jobs.drop(columns="queue_wait_s")
        stored.astype({"nodes": np.int64, "replicate": np.int64}).to_parquet(log)
    before = log.read_bytes()
    with pytest.raises(OutputError, match=r"the job log of this run '.*f\.jobs\.parquet' exists "
                                          r"and was not written by aiload; it is left as it is\. "
                                          r"It is named after the power file 'f\.parquet': "
                                          r"choose another name for the power file, or move or "
                                          r"delete 'f\.jobs\.parquet'\."):
        load.to_parquet(tmp_path / "f.parquet", jobs=True)
    assert log.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.jobs.parquet"]  # nothing else
    load.to_parquet(tmp_path / "f.parquet")  # without jobs=True the file is not touched
    assert log.read_bytes() == before


def test_the_job_log_replaces_its_own_file_and_an_older_unmarked_one(tmp_path):
    load = _short_load()
    path, log = tmp_path / "f.parquet", tmp_path / "f.jobs.parquet"
    # a log as aiload wrote it before job logs carried metadata: the stored columns only
    stored = load.jobs.drop(columns="queue_wait_s")
    pq.write_table(pa.Table.from_pandas(stored, preserve_index=False), log)
    assert b"aiload" not in pq.read_schema(log).metadata
    load.to_parquet(path, jobs=True)
    mark = json.loads(pq.read_schema(log).metadata[b"aiload"])
    assert mark["table"] == "jobs"
    load.to_parquet(path, jobs=True)  # a rerun replaces its own log
    pd.testing.assert_frame_equal(read_facility(path).jobs, load.jobs)
    from aiload.errors import InputError
    with pytest.raises(InputError, match=r"the jobs table of a facility file, not the power "
                                         r"file; read the power file"):
        read_facility(log)
