"""``read_trace``: one entry point for every supported power-log format."""

from __future__ import annotations

import importlib
import inspect
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from aiload._suggest import suggest
from aiload.errors import AiloadError, InputError, TraceFormatError
from aiload.traces._trace import Trace, check_tz
from aiload.traces.combine import combine
from aiload.traces.detect import FORMATS, detect_format, expand_directory

__all__ = ["read_trace"]


# format -> (module, reader); modules load on demand so one format never imports another's deps
_READERS = {
    "wattameter": ("wattameter", "read_wattameter_file"),
    "nvidia-smi": ("nvidia_smi", "read_nvidia_smi"),
    "nlr-parquet": ("nlr", "read_nlr_parquet"),
    "powertrace": ("powertrace", "read_powertrace"),
    "mlperf-mllog": ("mlperf", "read_mllog"),
    "mlperf-spl": ("mlperf", "read_spl"),
    "aiload": ("native", "read_native"),
}
# readers whose files carry absolute, zoned (or zone-less) time and accept tz=
_TAKES_TZ = {"wattameter", "nvidia-smi", "powertrace", "mlperf-spl"}
_TEXT = {"wattameter", "nvidia-smi", "powertrace", "mlperf-mllog", "mlperf-spl"}


def _require_text(path: Path, fmt: str) -> None:
    """Refuse a binary file (an image, an archive, Parquet) forced to a text format."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError as err:
        raise TraceFormatError(f"{path}: cannot be opened ({err.strerror}).") from None
    try:
        # a multi-byte character cut at the 4 KiB boundary is still text
        head.decode("utf-8") if len(head) < 4096 else head[:-4].decode("utf-8")
        binary = b"\x00" in head
    except UnicodeDecodeError:
        binary = True
    if binary:
        raise TraceFormatError(
            f"{path}: is a binary file (it starts {head[:8]!r}), not a {fmt!r} text log; "
            f"expected {FORMATS[fmt]}. Check the path, or leave format= out to detect it."
        )


def _read_one(reader: Callable[..., Trace], fmt: str, path: Path, options: dict) -> Trace:
    """Run one format reader; a failure of the parser on a bad file names the file."""
    if fmt in _TEXT:
        _require_text(path, fmt)
    try:
        return reader(path, **options)
    except AiloadError:
        raise
    except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError, OSError) as err:
        # pandas/pyarrow parser errors (ArrowInvalid and ParserError are ValueErrors) on a
        # damaged or foreign file: say which file and what the reader expected
        raise TraceFormatError(
            f"{path}: cannot be read as {fmt!r} ({type(err).__name__}: {str(err)[:200]}); "
            f"expected {FORMATS[fmt]}. The file may be truncated or damaged, or in another "
            "format: leave format= out to detect it."
        ) from err


def _reader(fmt: str) -> Callable[..., Trace]:
    module, name = _READERS[fmt]
    return getattr(importlib.import_module(f"aiload.traces.{module}"), name)


def _paths(path) -> list[Path]:
    if isinstance(path, (str, os.PathLike)):
        p = Path(path)
        if p.is_dir():
            return expand_directory(p)
        return [p]
    if isinstance(path, Sequence) and path:
        out: list[Path] = []
        for item in path:
            out.extend(_paths(item))
        return out
    raise InputError(
        f"read_trace: path={path!r}; expected a file, a run directory or a non-empty list of files."
    )


def _node_key(trace: Trace, path: Path) -> str:
    """The node a file belongs to (files of one node share it)."""
    fmt = trace.meta.format
    if fmt == "wattameter":
        # nvml_wattameter_<host>.log and rapl_wattameter_<host>.log are one node.
        return trace.meta.extra.get("node") or re.sub(r"^(nvml|rapl)_?", "", path.stem)
    if fmt == "aiload":
        return trace.meta.extra.get("host") or path.stem
    if fmt == "mlperf-spl":
        return f"{path.parent.name}"
    return path.stem


def read_trace(
    path,
    format: str | None = None,
    *,
    tz: str | None = None,
    combine_step_s: float | None = None,
    **options,
) -> Trace:
    """Read a power trace from any supported format.

    Parameters
    ----------
    path : path-like, sequence of path-like, or directory
        One file, the files of one run (one per node or per device), or a run directory
        (e.g. an MLPerf result folder of ``node_*.txt``).
    format : str, optional
        One of :data:`aiload.traces.FORMATS`; detected from each file when not given.
    tz : str, optional
        Zone of files whose timestamps carry none (WattAMeter, nvidia-smi, PTDaemon,
        PowerTrace). Default: UTC, recorded in ``meta.extra["tz_assumed"]``.
    combine_step_s : float, optional
        Grid step for a multi-file run [s]; default the largest median sampling interval
        of the files, rounded to 1 ms.
    **options
        Passed to the format's reader, e.g. ``window="all"`` (``mlperf-spl``),
        ``rapl_max_energy_range_uj=...`` (``wattameter``), ``run_id=...`` (``powertrace``).

    Returns
    -------
    Trace
        Point samples [W] for one file; for several files, interval means [W] on a common
        grid over the span all files cover (energy conserved, see
        :mod:`aiload.traces.combine`).

    Examples
    --------
    >>> trace = read_trace("../shared/data/mlperf-training-v4.0-smc-power/smc-ac-power/"
    ...     "results/8xSMC-H100-SXM-80GB/llama2_70b_lora/power/"
    ...     "result_5742-240517053836692164828_10")                      # doctest: +SKIP
    >>> trace.power_w.columns[:2].tolist()                               # doctest: +SKIP
    ['node_1', 'node_2']
    """
    paths = _paths(path)
    check_tz(tz)
    if format is not None and (not isinstance(format, str) or format not in FORMATS):
        raise InputError(
            f"read_trace: format={format!r} is not one of {list(FORMATS)}, or leave it out to "
            f"detect the format.{suggest(str(format), list(FORMATS))}"
        )
    formats = [format or detect_format(p) for p in paths]
    if "nlr-metadata" in formats:
        bad = paths[formats.index("nlr-metadata")]
        raise TraceFormatError(
            f"{bad}: this is an NLR metadata.csv (one row per run), not a power series; read it "
            "with aiload.traces.read_nlr_metadata(path), or read a run's results/NNNNNN.parquet "
            "with read_trace."
        )
    if len(set(formats)) > 1:
        listing = ", ".join(f"{p.name}: {f}" for p, f in zip(paths, formats))
        raise TraceFormatError(
            f"read_trace: the files are in different formats ({listing}); expected the files of "
            "one run in one format."
        )
    reader = _reader(formats[0])
    if formats[0] in _TAKES_TZ:
        options = {"tz": tz, **options}
    accepted = set(inspect.signature(reader).parameters) - {"path"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise InputError(
            f"read_trace: option(s) {unknown} are not understood by the {formats[0]!r} reader; "
            f"it takes {sorted(accepted - {'tz'}) or 'no options'}."
        )
    traces = [_read_one(reader, formats[0], p, options) for p in paths]
    if len(traces) == 1:
        return traces[0]
    keys = [_node_key(t, p) for t, p in zip(traces, paths)]
    nodes = list(dict.fromkeys(keys))
    single_node = len(nodes) == 1
    parts = [(None if single_node else key, t) for key, t in zip(keys, traces)]
    return combine(parts, step_s=combine_step_s, n_nodes=len(nodes))
