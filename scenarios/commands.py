"""``aiload run`` and ``aiload sweep``: the study commands of the ``aiload`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scenarios.loader import ScenarioError, bundled_names, parse_set

__all__ = ["register", "cmd_run", "cmd_sweep"]

_SCENARIO_HELP = "a scenario .toml file or a bundled name ({})"
_OVERWRITE_HELP = ("also write into a non-empty folder that is not an aiload output (or holds "
                   "another output): only files of the names aiload writes are replaced, "
                   "nothing else is touched")


def _sets(items: list[str] | None) -> dict[str, list]:
    out: dict[str, list] = {}
    for item in items or []:
        key, values = parse_set(item)
        if key in out:
            # the later one replaced the earlier without a word
            raise ScenarioError(
                f"--set {key} is given twice ({_values(out[key])} and {_values(values)}); give "
                f"it once: --set {key}=VALUE, or for `aiload sweep` all values after one = "
                f"(--set {key}=V1,V2,...)."
            )
        out[key] = values
    return out


def _values(values: list) -> str:
    return ",".join(v.isoformat() if hasattr(v, "isoformat") else str(v) for v in values)


def cmd_run(args: argparse.Namespace) -> int:
    """``aiload run SCENARIO [-o DIR] [--set F=V]``."""
    from scenarios.runner import digest, run_scenario

    overrides = {}
    for key, values in _sets(args.set).items():
        if len(values) != 1:
            raise ScenarioError(
                f"--set {key}: `aiload run` takes one value, got {len(values)}; "
                "use `aiload sweep` for several (a text with commas goes in double quotes: "
                f"--set '{key}=\"a, b\"')."
            )
        overrides[key] = values[0]
    out = args.output or Path("aiload-out") / Path(str(args.scenario)).stem
    result = run_scenario(args.scenario, out, overrides=overrides, progress=not args.quiet,
                          overwrite=args.overwrite, create_parents=args.output is None,
                          workers=args.workers, scheduler=args.scheduler)
    print(f"{result.out_dir}: " + ", ".join(result.files))
    for line in digest(result.summary):
        print(f"  {line}")
    if result.skipped:
        for reason in result.skipped.values():
            print(reason, file=sys.stderr)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """``aiload sweep SCENARIO --set F=V1,V2 [--replicates N] [-o DIR] [--scheduler A]``."""
    from scenarios.sweep import run_sweep
    from scenarios.sweep_queue import is_queue, run_queue_sweep

    out = args.output or Path("aiload-out") / (Path(str(args.scenario)).stem + "-sweep")
    if is_queue(args.scenario):  # [[facility]] tables: each case a whole run
        run_sweep = run_queue_sweep  # noqa: F811
    result = run_sweep(args.scenario, out, sets=_sets(args.set), replicates=args.replicates,
                       workers=args.workers, scheduler=args.scheduler,
                       start_method=args.start_method, progress=not args.quiet,
                       overwrite=args.overwrite, create_parents=args.output is None)
    print(f"{result.out_dir}: {len(result.cases)} cases x {result.replicates} replicates "
          f"({result.computed} computed now); "
          + ("comparison.csv" if result.bands.empty else "bands.parquet, comparison.csv"))
    return 0


def _epilog(command: str) -> str:
    """Examples, and where the bundled scenarios are to copy one as a start."""
    from importlib import resources  # noqa: PLC0415

    folder = resources.files("scenarios") / "bundled"
    if command == "run":
        examples = (
            "  aiload run inference-1mw --set facility.end=2025-01-02T00:00:00Z -o out/day1\n"
            "  aiload run inference-1mw --set facility.utilization=0.4 "
            "--set 'facility.overrides={ bursts = true }'\n"
        )
    else:
        examples = (
            "  aiload sweep colocation-10mw --set facility.end=2025-01-08T00:00:00Z "
            "--replicates 5\n"
            "  aiload sweep my-site.toml --set facility.utilization=0.2,0.4,0.6 --workers 4\n"
        )
    return (
        f"examples:\n{examples}"
        "--set takes TOML values: numbers and true/false bare, date-times with a time zone\n"
        "(2025-01-01T00:00:00Z), arrays and tables in single quotes for the shell.\n"
        f"To write your own scenario, copy a bundled one from\n  {folder}\n"
        "(its fields, units and ranges: docs/scenario-schema.md in the aiload repository)."
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``run`` and ``sweep`` to the ``aiload`` command."""
    names = ", ".join(bundled_names())
    run = subparsers.add_parser(
        "run", help="run a scenario: facility, metrics, grid studies, sizing, report",
        description="Run every section of a scenario and write facility.parquet, metrics.csv, "
        "grid and sizing results, summary.json and a self-contained report.html.",
        epilog=_epilog("run"), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("scenario", help=_SCENARIO_HELP.format(names))
    run.add_argument("-o", "--output", type=Path,
                     help="output folder: new, empty or an earlier `aiload run` output, whose "
                     "files are replaced (default aiload-out/NAME)")
    run.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)
    run.add_argument("--set", action="append", metavar="FIELD=VALUE",
                     help="override a field, e.g. --set facility.end=2025-01-08T00:00:00Z")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("--workers", type=int, default=0,
                     help="an interconnection queue ([[facility]] tables): generate the "
                     "facilities on a local Dask cluster of this many processes (default 0: "
                     "one after another)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="an interconnection queue: generate the facilities on an existing "
                     "Dask scheduler, e.g. tcp://10.0.0.5:8786")
    run.set_defaults(func=cmd_run)

    sweep = subparsers.add_parser(
        "sweep", help="Monte Carlo and parameter sweeps of the facility on Dask",
        description="Run every combination of --set values x replicates on a Dask cluster; each "
        "finished task is written at once, so an interrupted sweep resumes. Writes bands.parquet "
        "(percentiles across replicates) and comparison.csv (metrics per case).",
        epilog=_epilog("sweep"), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("scenario", help=_SCENARIO_HELP.format(names))
    sweep.add_argument("--set", action="append", metavar="FIELD=V1,V2,...",
                       help="values of a facility field, e.g. facility.utilization=0.2,0.4,0.6,0.8")
    sweep.add_argument("--replicates", type=int, help="replicates per case (default: the file's)")
    sweep.add_argument("-o", "--output", type=Path,
                       help="sweep folder: new, empty or an earlier sweep, which resumes "
                       "(default aiload-out/NAME-sweep)")
    sweep.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)
    sweep.add_argument("--scheduler", metavar="ADDRESS",
                       help="use an existing Dask scheduler, e.g. tcp://10.0.0.5:8786 (workers "
                       "write the task files: -o must be on a file system they share)")
    sweep.add_argument("--workers", type=int, default=2,
                       help="worker processes of the local Dask cluster; 0 = serial (default 2)")
    sweep.add_argument("--start-method", choices=("fork", "spawn", "forkserver"),
                       help="how local worker processes start (default: fork on Linux, which "
                       "reuses this process's imports; spawn starts clean interpreters)")
    sweep.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    sweep.set_defaults(func=cmd_sweep)
