"""Run every benchmark and report ratios against baselines measured in the same run.

Usage::

    python -m benchmarks            # all of them (several minutes on a 2-core machine)
    python -m benchmarks --quick    # reduced sizes, a smoke check (targets not judged)
    python -m benchmarks --only grid facility
    python -m benchmarks --only validation   # aiload beside the NLR study (docs/validation.md)
    python -m benchmarks --only stabilise    # campus day at 0.1 s + POI stabilisation (issue 28)
    python -m benchmarks --only queue        # ten facilities vs one, a case118 year (issue 30)

Each ``benchmarks/bench_<area>.py`` exposes ``run(quick: bool = False) -> list[dict]``; each row
has ``name, value, unit, baseline_name, baseline_value, ratio, target, passed``. Results are
printed as a table and written to ``benchmarks/results/<UTC time>.json``. Timings are never
asserted in tests: they live here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import platform
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="reduced sizes (smoke check; the targets are not judged)")
    parser.add_argument("--only", nargs="*", default=None, help=f"areas to run: {discover()}")
    args = parser.parse_args(argv)
    areas = args.only or discover()
    unknown = sorted(set(areas) - set(discover()))
    if unknown:
        parser.error(f"unknown benchmark area(s) {unknown}; available: {discover()}")

    rows: list[dict] = []
    failed: list[str] = []
    for area in areas:
        print(f"== {area}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.bench_{area}")
            for row in module.run(quick=args.quick):
                if args.quick and row.get("passed") is not None:
                    # targets are set for the full sizes: a smoke check does not judge them
                    row = {**row, "passed": None,
                           "target": f"{row.get('target', '')} (quick run: not judged)"}
                rows.append({"area": area, **row})
        except Exception:  # a broken benchmark is reported, the others still run
            traceback.print_exc()
            failed.append(area)
        print(f"   {area} took {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    cols = ["area", "name", "value", "unit", "baseline_name", "baseline_value", "ratio", "target", "passed"]
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) if rows else len(c) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(_fmt(r.get(c)).ljust(widths[c]) for c in cols))

    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    payload = {
        "when_utc": stamp,
        "quick": args.quick,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "processor": platform.processor()},
        "rows": rows,
        "failed_areas": failed,
    }
    path = out_dir / f"{stamp}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    print(f"\nwritten {path}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
