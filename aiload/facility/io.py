"""The facility result (:class:`FacilityLoad`) and its Parquet files: atomic writes,
streaming, and reading back.

The power table's schema metadata carries the key ``aiload`` with a JSON object
``{"kind": "facility", "seed": …, "freq_s": …, "spec": …, "jobs_file": …, …}``; the job log
goes, on request (``jobs=True``), to a sibling file ``<name>.jobs.parquet``; a limited run's
events table (``FacilityLoad.flexibility``) to ``<name>.flexibility.parquet``. Files are
written to a temporary name in the same folder and
renamed, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from aiload.errors import InputError
from aiload.facility.readcheck import check_power, parse_meta
from aiload.facility.spec import FacilitySpec
from aiload.outputs import OutputError, check_output_file, temp_path

__all__ = ["FacilityLoad", "write_facility", "write_jobs", "read_facility", "StreamWriter",
           "jobs_path", "flexibility_path", "spec_summary"]

KEY = b"aiload"


@dataclass(frozen=True)
class FacilityLoad:
    """Result of :func:`~aiload.facility.model.facility`.

    Attributes
    ----------
    power : pandas.DataFrame or None
        Tz-aware fixed-step interval means: ``it_kw`` (IT at the rack input), ``losses_kw``,
        ``cooling_kw``, ``facility_kw`` (= their sum, the meter) [kW], ``busy_nodes`` [-] and,
        where they apply, ``component_kw`` (GPU + CPU power, fleets whose profiles are measured
        there: the NLR boundary) [kW], ``queued_jobs`` [-], ``requests_per_s``,
        ``served_requests_per_s`` [requests/s].
        None when the series was streamed to Parquet (read it with ``read_facility``).
    jobs : pandas.DataFrame
        Job log, one row per batch job submitted in the run or running or waiting at its
        start (inference requests are not listed; they are in ``power``): ``arrival``, ``start``, ``end`` (tz-aware timestamps
        [ns]; ``start``/``end`` NaT if not started by the end), ``nodes`` [-] (int32),
        ``workload``, ``stream`` (categorical), ``replicate`` [-] (int16), ``queue_wait_s``
        [s] (``start - arrival``; NaN if not started).
    meta : dict
        Spec, seed, frequency, profile sources, aiload version, event counts, unserved requests.
    bands : pandas.DataFrame or None
        With ``replicates > 1``: percentiles of ``facility_kw`` across replicates per interval,
        columns ``p0 … p100`` [kW].
    scaling : pandas.DataFrame or None
        Inference replica change points (``time``, ``replicas``, ``service``).
    flexibility : pandas.DataFrame or None
        With a power limit: one row per event (a run of control periods in which a lever
        acts), see docs/flexibility.md, "Levers inside the facility"; None without a limit.
    """

    power: pd.DataFrame | None
    jobs: pd.DataFrame
    meta: dict = field(default_factory=dict)
    bands: pd.DataFrame | None = None
    scaling: pd.DataFrame | None = None
    flexibility: pd.DataFrame | None = None

    def to_parquet(self, path, *, jobs: bool = False, overwrite: bool = False) -> None:
        """Write ``power`` atomically; with ``jobs=True`` also the job log next to it
        (``<name>.jobs.parquet``, :func:`jobs_path`). See :func:`write_facility`."""
        write_facility(self, path, jobs=jobs, overwrite=overwrite)


def spec_summary(spec: FacilitySpec) -> dict:
    """A JSON-friendly description of a spec (for file metadata)."""

    def plain(value):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                    if f.name != "catalogue"}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        return repr(value)[:200]

    return plain(spec)


def jobs_path(path) -> Path:
    """Sibling file of the job log for a power file ``path``."""
    path = Path(path)
    return path.with_name(path.stem + ".jobs.parquet")


def _meta_json(meta: dict) -> bytes:
    plain = {}
    for key, value in meta.items():
        if key == "spec":
            plain[key] = spec_summary(value)
        elif isinstance(value, pd.Timestamp):
            plain[key] = value.isoformat()
        else:
            plain[key] = value
    plain["kind"] = "facility"
    return json.dumps(plain, default=str).encode()


def _tmp(path: Path) -> Path:
    # .NAME.PID-HEX.tmp: aiload.outputs.clean_debris removes those of processes that are gone
    return temp_path(path)


def _aiload_table(path: Path) -> str | None:
    """Which facility table aiload wrote to ``path``: ``"power"``, ``"jobs"`` or
    ``"flexibility"``; ``"other"`` for another aiload file; None when aiload did not write it."""
    try:
        raw = (pq.read_metadata(path).metadata or {}).get(KEY)
    except (pa.ArrowException, OSError):  # not Parquet at all, or unreadable
        return None
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return "other"
    if not isinstance(meta, dict) or meta.get("kind") != "facility":
        return "other"
    table = meta.get("table", "power")
    return table if table in ("power", "jobs", "flexibility") else "other"


def _is_facility_file(path: Path) -> bool:
    """True when ``path`` is a facility power file that aiload wrote (not its job log, not
    the events of a limited run, not another aiload result)."""
    return _aiload_table(path) == "power"


def _is_events_file(path: Path) -> bool:
    """True when ``path`` is the events table of a limited run that aiload wrote."""
    return _aiload_table(path) == "flexibility"


# the stored job-log columns of every aiload version so far, and those an older or a limited
# run may add (queue_wait_s was stored before 2c9b40c; delay_s comes with a power limit)
_JOB_COLUMNS = {"arrival", "start", "end", "nodes", "workload", "stream", "replicate"}
_JOB_EXTRA = {"queue_wait_s", "delay_s"}


def _is_job_log(path: Path) -> bool:
    """True when ``path`` is a job log that aiload wrote (so a new one may replace it).

    A job log written now carries aiload's metadata. One written before that (without it) is
    recognised by its exact columns and their types: ``arrival``, ``start``, ``end`` as
    timestamps, ``nodes`` int32, ``workload`` and ``stream`` dictionary-encoded,
    ``replicate`` int16, optionally ``queue_wait_s`` and ``delay_s`` as float64, and nothing
    else. Any other file, Parquet or not, is the user's.
    """
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError):  # not Parquet at all, or unreadable
        return False
    if KEY in (schema.metadata or {}):
        return _aiload_table(path) == "jobs"
    names = set(schema.names)
    if len(names) != len(schema.names) or not _JOB_COLUMNS <= names <= _JOB_COLUMNS | _JOB_EXTRA:
        return False
    kind = {name: schema.field(name).type for name in names}
    return (all(pa.types.is_timestamp(kind[c]) for c in ("arrival", "start", "end"))
            and kind["nodes"] == pa.int32() and kind["replicate"] == pa.int16()
            and all(pa.types.is_dictionary(kind[c]) for c in ("workload", "stream"))
            and all(kind[c] == pa.float64() for c in names & _JOB_EXTRA))


class StreamWriter:
    """Append power windows to a Parquet file; publish it atomically on :meth:`close`.

    The path is checked when the writer is made, before the simulation starts: its folder
    must exist and be writable, it must not be a folder, and an existing file is replaced
    only when it is a facility power file that aiload wrote (never a job log, the events of
    a limited run or another result); temporary files of a killed earlier run are removed.
    """

    def __init__(self, path) -> None:
        table = _aiload_table(Path(path)) if Path(path).is_file() else None
        if table in ("jobs", "flexibility"):
            name = {"jobs": "job log", "flexibility": "events table"}[table]
            raise OutputError(
                f"stream_to {str(path)!r} is the {name} of a facility file, not a power file; "
                "it is left as it is. Stream to the power file's own name (<name>.parquet) or "
                "choose another name.")
        self.path = check_output_file(path, is_ours=_is_facility_file, what="stream_to")
        self.tmp = _tmp(self.path)
        self.writer: pq.ParquetWriter | None = None
        self.schema: pa.Schema | None = None

    def write(self, frame: pd.DataFrame) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=True)
        if self.writer is None:
            self.schema = table.schema
            self.writer = pq.ParquetWriter(self.tmp, self.schema)
        self.writer.write_table(table.cast(self.schema))

    def close(self, meta: dict) -> None:
        if self.writer is None:
            raise InputError("StreamWriter.close: nothing was written.")
        # the footer is written at close, so the metadata can still be added here
        # a streamed run writes no job log: never pair this file with one left beside it
        meta = {**meta, "jobs_file": False}
        self.writer.add_key_value_metadata({KEY.decode(): _meta_json(meta).decode()})
        self.writer.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.tmp.unlink(missing_ok=True)


def write_jobs(jobs: pd.DataFrame, path) -> None:
    """Write a job log compactly and losslessly (zstd; times delta-encoded as integer ns).

    Arrival times are sorted and start/end nearly so: delta encoding stores their small
    differences instead of full 64-bit nanosecond stamps (about 40 % smaller than snappy
    with default encodings). Categoricals keep their dictionary encoding. ``queue_wait_s``
    is not stored when ``arrival`` and ``start`` are (it is ``start - arrival``;
    :func:`read_facility` puts it back): 13 % of a campus month's file. The table carries
    aiload's metadata (``{"kind": "facility", "table": "jobs"}``), so a later
    :func:`write_facility` knows the file as its own.
    """
    if {"arrival", "start", "queue_wait_s"} <= set(jobs.columns):
        jobs = jobs.drop(columns="queue_wait_s")
    table = pa.Table.from_pandas(jobs, preserve_index=False)
    # aiload's mark: a later write may replace this file, never a user's file of that name
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), KEY: _meta_json({"table": "jobs"})})
    categorical = [c for c in jobs.columns if isinstance(jobs[c].dtype, pd.CategoricalDtype)]
    delta = {c: "DELTA_BINARY_PACKED" for c in jobs.columns
             if c not in categorical and (pd.api.types.is_integer_dtype(jobs[c].dtype)
                                          or pd.api.types.is_datetime64_any_dtype(jobs[c].dtype))}
    floats = {c: "BYTE_STREAM_SPLIT" for c in jobs.columns
              if pd.api.types.is_float_dtype(jobs[c].dtype)}
    pq.write_table(table, path, compression="zstd", use_dictionary=categorical or False,
                   column_encoding={**delta, **floats})


def write_facility(load, path, *, jobs: bool = False, overwrite: bool = False) -> None:
    """Write ``load.power`` to ``path``, and with ``jobs=True`` ``load.jobs`` to
    :func:`jobs_path` (both atomic).

    An existing file at ``path`` is replaced when it is a facility power file that aiload
    wrote, or with ``overwrite=True``; any other file (the user's data, a job log, the events
    of a limited run, a folder) is refused before anything is written.

    The power file's metadata records ``jobs_file`` (whether the job log was written with
    it), so :func:`read_facility` never pairs it with a job log left by an earlier write.

    The sibling files are named after ``path``; an existing one is replaced only when aiload
    wrote it, otherwise the write is refused (:class:`~aiload.outputs.OutputError`, an
    :class:`~aiload.errors.InputError`) before any file is written. A job log is aiload's
    when it carries aiload's metadata or, for logs written before they carried it, has
    exactly the columns and types of an aiload job log (see ``_is_job_log``).
    """
    if load.power is None:
        raise InputError("write_facility: this result was streamed; its file already exists.")
    for name, flag in (("jobs", jobs), ("overwrite", overwrite)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InputError(f"write_facility({name}=): expected True or False, got {flag!r} "
                             f"(the text 'False' would count as true).")
    path = Path(path)
    table = _aiload_table(path) if path.is_file() else None
    if table in ("jobs", "flexibility") and not overwrite:
        name = {"jobs": "job log", "flexibility": "events table"}[table]
        raise OutputError(
            f"write_facility: {str(path)!r} is the {name} of another facility file, not a "
            "power file; it is left as it is. Choose another name, or pass overwrite=True.")
    check_output_file(path, overwrite=overwrite, is_ours=_is_facility_file,
                      what="the facility file")
    table = pa.Table.from_pandas(load.power, preserve_index=True)
    extra = {} if load.flexibility is None else {"flexibility_file": True}
    meta = _meta_json({**load.meta, "jobs_file": bool(jobs), **extra})
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), KEY: meta})
    if load.flexibility is not None:
        # the events file is named after the power file: a file of that name that aiload did
        # not write is left alone
        _check_sibling(flexibility_path(path), path, _is_events_file,
                       "the events file of this limited run")
    if jobs:
        _check_sibling(jobs_path(path), path, _is_job_log, "the job log of this run")
    tmp, jtmp = _tmp(path), _tmp(jobs_path(path))
    ftmp = _tmp(flexibility_path(path))
    try:
        pq.write_table(table, tmp)
        if jobs:
            write_jobs(load.jobs, jtmp)
            os.replace(jtmp, jobs_path(path))
        if load.flexibility is not None:
            # the events of a limited run, next to the power file
            events = pa.Table.from_pandas(load.flexibility, preserve_index=False)
            events = events.replace_schema_metadata(
                {**(events.schema.metadata or {}), KEY: _meta_json({"table": "flexibility"})})
            pq.write_table(events, ftmp)
            os.replace(ftmp, flexibility_path(path))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        jtmp.unlink(missing_ok=True)
        ftmp.unlink(missing_ok=True)


def _check_sibling(sibling: Path, path: Path, is_ours, what: str) -> None:
    """Refuse to replace a sibling file of ``path`` that aiload did not write."""
    if sibling.is_file() and not is_ours(sibling):
        # write_facility has no overwrite switch: the fix is another name or moving the file
        raise OutputError(
            f"{what} {str(sibling)!r} exists and was not written by aiload; it is left as it "
            f"is. It is named after the power file {path.name!r}: choose another name for the "
            f"power file, or move or delete {sibling.name!r}.")
    check_output_file(sibling, is_ours=is_ours, what=what)  # folders, debris of killed runs


def flexibility_path(path) -> Path:
    """Sibling file of a limited run's events table for a power file ``path``."""
    path = Path(path)
    return path.with_name(path.stem + ".flexibility.parquet")


def read_facility(path):
    """Read a file written by :meth:`FacilityLoad.to_parquet` or streamed by ``facility``.

    Returns
    -------
    FacilityLoad
        ``meta`` is the JSON metadata (the spec as a plain dict); ``jobs`` is the sibling job
        log (``queue_wait_s`` recomputed as ``start - arrival`` [s]), empty when the power
        file was written without one (``jobs_file`` false) or the file is absent.

    Raises
    ------
    aiload.errors.InputError
        A file that is not an aiload facility power file, or one edited since it was
        written: broken or incomplete metadata, a ``freq_s`` other than the step of the
        times, a naive, irregular or repeated time index, a missing or non-numeric kW
        column, NaN or infinite power (checks in :mod:`aiload.facility.readcheck`). Rows out
        of time order, a missing ``freq_s`` of a regular series and a lost index record are
        repaired, with an :class:`~aiload.errors.InputWarning` that says so.
    """
    path = Path(path)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise InputError(f"read_facility: {str(path)!r} {what}; give the power file a run wrote "
                         "(e.g. out/facility.parquet).")
    # footer key-value metadata: holds the key for both whole-table and streamed writes
    try:
        raw = (pq.read_metadata(path).metadata or {}).get(KEY)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"read_facility: {str(path)!r} is not a readable Parquet file "
                         f"({exc}); give the power file a run wrote (<name>.parquet), not a "
                         "CSV or a file cut short.") from None
    if raw is None:
        raise InputError(f"{path}: no 'aiload' metadata; not a facility file written by aiload.")
    meta = parse_meta(path, raw)
    if "kind" not in meta:
        raise InputError(f"read_facility: {str(path)!r}: its 'aiload' metadata has no 'kind'; a "
                         "facility file has kind 'facility'. The metadata was edited: write the "
                         "file again with FacilityLoad.to_parquet, or restore the original.")
    if meta.get("kind") != "facility":
        raise InputError(f"{path}: aiload file of kind {meta.get('kind')!r}, expected 'facility'.")
    if "table" in meta:  # a sibling: the job log or a limited run's events
        raise InputError(f"{path}: the {meta['table']} table of a facility file, not the power "
                         "file; read the power file (<name>.parquet), which brings it along.")
    power = check_power(path, meta, _read_table(path, "power file"))
    jp = jobs_path(path)
    jobs = pd.DataFrame()
    if meta.get("jobs_file", True) and jp.exists():  # files written before the key existed lack it
        jobs = _read_table(jp, "job log")
        if {"arrival", "start"} <= set(jobs.columns) and "queue_wait_s" not in jobs.columns:
            try:
                jobs["queue_wait_s"] = (jobs["start"] - jobs["arrival"]).dt.total_seconds()
            except (TypeError, AttributeError):
                raise InputError(
                    f"read_facility: the job log {str(jp)!r} has 'arrival' and 'start' of types "
                    f"{jobs['arrival'].dtype} and {jobs['start'].dtype}, expected timestamps; "
                    "it was edited: write the facility again with to_parquet(..., jobs=True), "
                    "or move the job log away to read the power alone.") from None
    flexibility = None
    if meta.get("flexibility_file") and flexibility_path(path).exists():
        flexibility = _read_table(flexibility_path(path), "events table")
    return FacilityLoad(power, jobs, meta, flexibility=flexibility)


def _read_table(path: Path, what: str) -> pd.DataFrame:
    try:
        return pq.read_table(path).to_pandas()
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError) as exc:
        # ValueError/TypeError/KeyError: pandas metadata that no longer matches the columns
        raise InputError(f"read_facility: the {what} {str(path)!r} cannot be read as a table "
                         f"({type(exc).__name__}: {exc}); it was edited or cut short: write "
                         "it again with FacilityLoad.to_parquet.") from None
