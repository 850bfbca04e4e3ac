"""``aiload profiles``: list the bundled profile library; ``aiload profiles show NAME``."""

from __future__ import annotations

import argparse
import json

import numpy as np

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``profiles`` to the ``aiload`` command line."""
    p = subparsers.add_parser(
        "profiles",
        help="list the bundled per-node power profiles (measured and synthesised)",
        description=("List the bundled per-node workload power profiles: hardware, workload, node "
                     "count, resolution, mean power, source, license, measured or synthesised. "
                     "'aiload profiles show NAME' prints one profile's summary."),
    )
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list",
                   help="'list' (default) or 'show NAME'")
    p.add_argument("name", nargs="?", help="profile name for 'show'")
    p.add_argument("--workload", help="only this workload (training, fine-tuning, ...)")
    p.add_argument("--hardware", help="only this hardware (4xH100, 8xH100-SXM, 8xH200-SXM)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def _list(args: argparse.Namespace) -> int:
    from aiload.profiles import catalog

    cat = catalog()
    for column in ("workload", "hardware"):
        given = getattr(args, column)
        known = sorted(set(cat[column]))
        if given and given not in known:  # was an empty table without a word
            import difflib

            from aiload.errors import InputError

            near = difflib.get_close_matches(given, known, n=1)
            raise InputError(
                f"--{column} {given!r}: no bundled profile has this {column}."
                + (f" Did you mean {near[0]!r}?" if near else "")
                + f" Known: {', '.join(known)}; or leave --{column} out to list all."
            )
    if args.workload:
        cat = cat[cat["workload"] == args.workload]
    if args.hardware:
        cat = cat[cat["hardware"] == args.hardware]
    if args.json:
        print(json.dumps(cat.to_dict(orient="records"), indent=1))
        return 0
    table = cat[["name", "workload", "model", "hardware", "nodes", "step_s", "duration_s",
                 "replicates", "mean_power_w", "measured", "license"]].copy()
    table["measured"] = np.where(table["measured"], "measured", "synthesised")
    table = table.rename(columns={"measured": "kind"})
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.1f}"))
    print(f"\n{len(table)} profiles; power is per node [W]; 'aiload profiles show NAME' for details.")
    return 0


def _show(args: argparse.Namespace) -> int:
    from aiload.errors import InputError
    from aiload.profiles import get

    if not args.name:
        raise InputError("'aiload profiles show' needs a NAME; list them with 'aiload profiles'.")
    p = get(args.name)
    values = p.power_w.to_numpy(np.float64)
    summary = {
        "name": p.name, "workload": p.workload, "model": p.model, "hardware": p.hardware,
        "gpus_per_node": p.gpus_per_node, "nodes": p.nodes, "step_s": p.step_s,
        "duration_s": p.duration_s, "replicates": p.replicates,
        "mean_power_w": p.mean_power_w, "p5_power_w": float(np.percentile(values, 5)),
        "p95_power_w": float(np.percentile(values, 95)), "max_power_w": float(values.max()),
        "energy_wh_per_node": p.energy_wh, "measured": p.measured, "source": p.source,
        "license": p.license, "citation": p.citation, "boundary": p.boundary, "notes": p.notes,
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    width = max(map(len, summary))
    for key, value in summary.items():
        text = f"{value:,.1f}" if isinstance(value, float) else str(value)
        print(f"{key:<{width}}  {text}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Entry of ``aiload profiles`` (returns the exit code)."""
    return _show(args) if args.action == "show" else _list(args)
