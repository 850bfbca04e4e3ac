"""``aiload metrics FILE [FILE ...]``: the grid-facing figures of traces and facility outputs."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path

import pandas as pd

from aiload.errors import InputError
from aiload.metrics.summary import DEFAULT_WINDOWS, summary
from aiload.outputs import OutputDir

__all__ = ["register", "load_power", "run"]


def _facility_column(path: Path, column: str | None) -> tuple[pd.Series, str] | None:
    """The chosen column of an aiload facility Parquet file, or None if it is not one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # footer key-value metadata: where both whole-table and streamed writes put the key
        raw = (pq.read_metadata(path).metadata or {}).get(b"aiload")
    except (OSError, pa.ArrowInvalid):  # not Parquet at all: let the trace reader say what it is
        return None
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
        # a trace of `aiload record` carries "format"; a facility file whose "kind" was
        # removed is still read as one, so that read_facility says what is missing
        kind = meta.get("kind") or ("trace" if "format" in meta else "facility")
    except (ValueError, UnicodeDecodeError, AttributeError):
        kind = "facility"  # damaged metadata: read_facility says what is wrong with it
    if kind != "facility":
        return None
    from aiload.facility import read_facility

    frame = read_facility(path).power
    column = column or "facility_kw"
    if column not in frame.columns:
        raise InputError(
            f"{path}: no column {column!r} in this facility output; expected one of "
            f"{list(frame.columns)}. Choose one with --column."
        )
    return frame[column], "intervals"


def load_power(path: str | os.PathLike, column: str | None = None) -> tuple[pd.Series, str]:
    """Read one input of the command: a facility Parquet file or any trace ``read_trace`` reads.

    Returns
    -------
    (pandas.Series, str)
        The power (``facility_kw`` or the chosen column [kW]; a trace's total [W]) and how
        to read its values (``"intervals"`` or ``"samples"``).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory; expected a trace or a facility output.")
    if path.is_file() and path.suffix.lower() in {".parquet", ".pq"}:
        found = _facility_column(path, column)
        if found is not None:
            return found
    from aiload import read_trace

    trace = read_trace(path)
    return trace.total_w(), ("intervals" if trace.is_interval_means else "samples")


def _label(path: str, used: set[str]) -> str:
    name = Path(path).stem or str(path)
    label, n = name, 2
    while label in used:
        label, n = f"{name}-{n}", n + 1
    used.add(label)
    return label


def _write_plots(out: OutputDir, series: dict[str, pd.Series], kinds: dict[str, str]) -> list[Path]:
    # matplotlib is imported only when figures are asked for
    from aiload.metrics.plots import (  # noqa: PLC0415
        plot_calendar_bands,
        plot_comparison,
        plot_load_duration,
        plot_psd,
        plot_ramp_histogram,
    )

    with out:
        # figures go to a staging folder inside the output folder and are moved into place
        # together, so a failed or interrupted run leaves the folder as it was
        for label, s in series.items():
            kind = kinds[label]
            figures = {
                "ramps": plot_ramp_histogram(s, kind=kind),
                "load_duration": plot_load_duration({label: s}, kind=kind),
                "psd": plot_psd(s, kind=kind),
            }
            idx = s.index
            if isinstance(idx, pd.DatetimeIndex) and idx[-1] - idx[0] >= pd.Timedelta(days=2):
                figures["calendar"] = plot_calendar_bands(s, kind=kind)
            for name, fig in figures.items():
                fig.savefig(out.staging / f"{label}_{name}.png", dpi=90)
        if len(series) > 1:
            # traces come in W and facility outputs in kW: compare them in kW
            in_kw = {k: _as_kw(v) for k, v in series.items()}
            shared = set(kinds.values())
            fig = plot_comparison(in_kw, kind=shared.pop() if len(shared) == 1 else "auto")
            fig.savefig(out.staging / "comparison.png", dpi=90)
        names = out.commit()
    return [out.path / name for name in names]


def _number(value: float) -> str:
    """A figure for the table: thousands separated, never in exponent form above 1."""
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.6g}"


def _as_kw(s: pd.Series) -> pd.Series:
    factor = {"_w": 1e-3, "_kw": 1.0, "_mw": 1e3}
    for suffix, f in factor.items():
        if str(s.name).lower().endswith(suffix):
            return (s * f).rename(str(s.name)[: -len(suffix)] + "_kw")
    return s


#: the figures ``--plot`` writes (only these may be removed by a later run)
_PLOT_FILE = re.compile(r"^(.+_(ramps|load_duration|psd|calendar)|comparison)\.png$")


def run(args: argparse.Namespace) -> int:
    """Run ``aiload metrics`` (returns the exit code)."""
    windows = tuple(w.strip() for w in args.windows.split(",")) if args.windows else DEFAULT_WINDOWS
    # the figure folder is checked before any file is read
    plots = (OutputDir(args.plot, kind="plots", overwrite=args.overwrite,
                       owns=lambda name: bool(_PLOT_FILE.match(name))) if args.plot else None)
    used: set[str] = set()
    tables, series, kinds = {}, {}, {}
    for path in args.files:
        power, kind = load_power(path, args.column)
        label = _label(path, used)
        tables[label] = summary(power, kind=kind, windows=windows)
        series[label] = power.rename(f"{label}_{str(power.name).rsplit('_', 1)[-1]}")
        kinds[label] = kind
    if args.json:
        out = {
            "inputs": [
                {
                    "file": str(path),
                    "label": label,
                    "kind": kinds[label],
                    "metrics": [
                        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}
                        for rec in tables[label].to_dict("records")
                    ],
                }
                for path, label in zip(args.files, tables)
            ]
        }
        print(json.dumps(out, indent=1))
    else:
        wide = pd.concat(
            {label: t.set_index(["metric", "window", "unit"])["value"] for label, t in tables.items()},
            axis=1,
        )
        with pd.option_context("display.max_rows", None, "display.width", 200):
            print(wide.to_string(float_format=_number, na_rep="n/a"))
    if plots is not None:
        written = _write_plots(plots, series, kinds)
        if not args.json:
            for path in written:
                print(f"wrote {path}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``metrics`` to the ``aiload`` command line."""
    p = subparsers.add_parser(
        "metrics",
        help="peaks, ramps, swings, spectra and billing demand of traces or facility outputs",
        description=(
            "Print the grid-facing figures (aiload.metrics.summary) of each FILE: a measured "
            "trace in any format aiload.read_trace reads (a file or a run directory), or a "
            "facility output Parquet file. Figures the sampling cannot support print as n/a."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="trace file, run directory or facility Parquet")
    p.add_argument("--plot", metavar="DIR",
                   help="write PNG figures into DIR (new, empty, or an earlier --plot folder)")
    p.add_argument("--overwrite", action="store_true",
                   help="also write figures into a non-empty DIR that aiload did not make; only "
                   "files of the figures' names are replaced")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")
    p.add_argument("--column", help="column of a facility output to use (default facility_kw)")
    p.add_argument(
        "--windows",
        help=f"comma-separated ramp/swing windows (default {','.join(DEFAULT_WINDOWS)})",
    )
    p.set_defaults(func=run)
