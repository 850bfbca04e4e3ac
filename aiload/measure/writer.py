"""The aiload native trace file: an Arrow IPC stream while recording, Parquet at the end.

Samples are appended to ``<name>.parquet.partial.arrows`` as record batches, one per flush, so
a killed recorder loses at most one flush interval; a clean stop converts the stream to
``<name>.parquet`` through a temporary file and an atomic rename. Both forms carry the same
schema and the JSON metadata under the key ``b"aiload"`` (see ``docs/record.md``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from aiload.errors import TraceFormatError
from aiload.outputs import temp_path, write_atomic

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "METADATA_KEY",
    "PARTIAL_SUFFIX",
    "partial_path",
    "trace_schema",
    "StreamWriter",
    "read_partial",
    "finalize",
]

FORMAT_NAME = "aiload-trace"
FORMAT_VERSION = 1
METADATA_KEY = b"aiload"
PARTIAL_SUFFIX = ".partial.arrows"


def partial_path(path: os.PathLike | str) -> Path:
    """The stream file written while ``path`` (a ``.parquet`` name) is being recorded."""
    path = Path(path)
    return path.with_name(path.name + PARTIAL_SUFFIX)


def trace_schema(columns: Sequence[str], metadata: dict[str, Any]) -> pa.Schema:
    """Arrow schema of a trace: ``time`` (UTC, ns), ``read_duration_s`` [s], then ``columns``.

    Parameters
    ----------
    columns : sequence of str
        Device channels, e.g. ``gpu0_power_w`` [W]; all float64.
    metadata : dict
        The JSON-serialisable metadata stored under ``b"aiload"``.
    """
    fields = [pa.field("time", pa.timestamp("ns", tz="UTC")), pa.field("read_duration_s", pa.float64())]
    fields += [pa.field(c, pa.float64()) for c in columns]
    return pa.schema(fields, metadata={METADATA_KEY: json.dumps(metadata).encode()})


class StreamWriter:
    """Append record batches to an Arrow IPC stream file and make each one durable.

    Parameters
    ----------
    path : path
        The stream file; it must not exist. It appears, schema already written, in one step.
    schema : pyarrow.Schema
        From :func:`trace_schema`.
    """

    def __init__(self, path: os.PathLike | str, schema: pa.Schema) -> None:
        self.path = Path(path)
        self.schema = schema
        tmp = temp_path(self.path)  # .NAME.PID-HEX.tmp: cleared by a later run if killed
        self._file = open(tmp, "xb")
        try:
            self._writer = pa.ipc.new_stream(self._file, schema)
            # pyarrow writes the schema with the first batch: an empty one puts it (and the
            # metadata) on disk now, so a kill before the first flush still leaves a readable file
            self._writer.write_batch(pa.RecordBatch.from_pylist([], schema=schema))
            self._sync()
            # publish under the real name only once the schema is there; link() fails if the
            # name exists, so two recorders never share a file
            os.link(tmp, self.path)
        except BaseException:
            self._file.close()
            raise
        finally:
            os.unlink(tmp)
        self.rows_written = 0

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def write(self, time_ns: Sequence[int], columns: Sequence[Sequence[float]]) -> None:
        """Append one batch: midpoint times [ns since epoch, UTC] and one list per column."""
        arrays = [pa.array(time_ns, pa.int64()).cast(self.schema.field(0).type)]
        arrays += [pa.array(c, pa.float64()) for c in columns]
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self._sync()
        self.rows_written += len(time_ns)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._file.closed

    def close(self) -> None:
        """Write the end-of-stream marker and close the file."""
        if not self._file.closed:
            self._writer.close()
            self._sync()
            self._file.close()


def read_partial(path: os.PathLike | str) -> pa.Table:
    """Every complete batch of a stream file, ignoring a batch cut short by a kill.

    Parameters
    ----------
    path : path
        A ``.partial.arrows`` file.

    Returns
    -------
    pyarrow.Table
        All complete batches, with the schema (and its metadata) of the stream.

    Raises
    ------
    TraceFormatError
        When not even the schema can be read (killed before the first write).
    """
    path = Path(path)
    with open(path, "rb") as f:
        try:
            reader = pa.ipc.open_stream(f)
        except (pa.ArrowInvalid, OSError) as exc:
            raise TraceFormatError(
                f"{path}: expected an Arrow IPC stream written by `aiload record`, but the "
                f"schema could not be read ({exc}); the recording stopped before its first write."
            ) from None
        batches = []
        while True:
            try:
                batches.append(reader.read_next_batch())
            except StopIteration:
                break
            except (pa.ArrowInvalid, OSError):
                break  # the last batch was cut short by a kill: keep the complete ones
        return pa.Table.from_batches(batches, schema=reader.schema)


def finalize(partial: os.PathLike | str, final: os.PathLike | str, end: str | None = None) -> Path:
    """Convert a stream file to the final Parquet file, atomically, and delete the stream.

    Parameters
    ----------
    partial : path
        The ``.partial.arrows`` stream.
    final : path
        The ``.parquet`` file to create (replaced if it exists).
    end : str or None
        ISO-8601 UTC end of the recording, stored in the metadata.

    Returns
    -------
    pathlib.Path
        ``final``.
    """
    partial, final = Path(partial), Path(final)
    table = read_partial(partial)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["end"] = end
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})

    def write(tmp: Path) -> None:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())

    write_atomic(final, write)
    partial.unlink()
    return final
