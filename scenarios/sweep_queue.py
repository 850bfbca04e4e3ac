"""``aiload sweep`` of an interconnection queue: queue variants, each a whole ``aiload run``.

A queue's result is its allocation, which needs the grid studies, so each case of a queue
sweep (``[[facility]]`` tables) is one ``aiload run`` of the scenario with the case's
values (one task each, serial or on Dask) into ``cases/case-NNN/``; a case whose
``summary.json`` holds the same validated inputs is found finished and not recomputed.
Sweepable: any field of a queued facility (``facility.2.utilization``, also written
``facility[2].utilization``) and of ``[queue]`` (``queue.order = ["0,1,2", "2,1,0"]``,
``queue.seed``, ``queue.seeds``). ``comparison.csv``: one row per case and facility, in the
case's queue order (swept values, requested and allocated MW, what binds, the common
scaling); ``report.html``: the cases, the allocations side by side, and each case's figure.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import aiload
from aiload.errors import InputError
from aiload.outputs import OutputDir, unmarked_output, write_atomic
from scenarios.jsonsafe import jsonable
from scenarios.loader import load_scenario, resolve_source

__all__ = ["normalise_key", "plan_queue_cases", "run_queue_sweep", "is_queue"]

_INDEX = re.compile(r"^facility\[(\d+)\]")


def normalise_key(key: str) -> str:
    """``facility[2].utilization`` -> ``facility.2.utilization`` (the loader's spelling)."""
    return _INDEX.sub(r"facility.\1", key)


def _allowed(key: str) -> bool:
    return (bool(re.match(r"^facility\.\d+\.", key)) or key.startswith("queue.")
            or key.startswith("grid.flexible."))


def plan_queue_cases(source: str | Path, axes: Mapping[str, Sequence[Any]],
                     overrides: Mapping[str, Any] | None, replicates: int
                     ) -> list[tuple[str, dict[str, Any], Any]]:
    """``(case id, overrides, validated scenario)`` of every case, before anything runs."""
    from scenarios.queue_study import check_queue  # noqa: PLC0415

    if replicates != 1:
        raise InputError(
            f"replicates = {replicates}: a queue sweep runs each case once (a whole `aiload "
            "run` with the grid studies); for Monte Carlo sweep the queue's seed, e.g. --set "
            "queue.seed=0,1,2,3, and leave replicates at 1.")
    bad = [k for k in axes if not _allowed(k)]
    if bad:
        raise InputError(
            f"sweep over {', '.join(map(repr, bad))}: a queue sweep varies a queued facility's "
            "fields (facility.2.utilization, or facility[2].utilization), [queue]'s "
            "(queue.order, queue.seed, queue.seeds) or the flexibility's ([grid.flexible]: "
            "grid.flexible.tolerance_mw, grid.flexible.controller, ...); run other studies "
            "with `aiload run --set`.")
    keys = sorted(axes)
    cases = []
    for i, values in enumerate(itertools.product(*(axes[k] for k in keys))):
        case = dict(zip(keys, values))
        scenario = load_scenario(source, overrides={**dict(overrides or {}), **case})
        check_queue(scenario)
        cases.append((f"case-{i:03d}", case, scenario))
    return cases


def run_case(source: str, overrides: dict[str, Any], folder: str) -> str:
    """One case: ``aiload run`` of the scenario with ``overrides`` into ``folder`` (a task)."""
    from scenarios.runner import run_scenario  # noqa: PLC0415

    run_scenario(source, folder, overrides=overrides, progress=False, overwrite=True,
                 create_parents=True)
    return folder


def _finished(folder: Path, scenario) -> bool:
    path = folder / "summary.json"
    if not path.is_file():
        return False
    try:
        inputs = json.loads(path.read_text(encoding="utf-8")).get("inputs")
    except ValueError:
        return False
    return inputs == json.loads(json.dumps(jsonable(scenario.model_dump(mode="json"))))


def _execute(source: str, tasks: list[tuple[dict, str]], workers: int,
             scheduler: str | None, start_method: str | None) -> None:
    if scheduler is None and workers == 0:
        for overrides, folder in tasks:
            run_case(source, overrides, folder)
        return
    from distributed import Client  # noqa: PLC0415

    from scenarios import sweep  # noqa: PLC0415

    cluster = (sweep.local_cluster(workers, start_method=start_method) if scheduler is None
               else None)
    client = Client(cluster if cluster is not None else scheduler)
    try:
        client.run(sweep._warm_worker, os.getpid())
        client.gather([client.submit(run_case, source, o, f, pure=False) for o, f in tasks])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def comparison_of(cases: Sequence[tuple[str, dict, Any]], out_dir: Path) -> pd.DataFrame:
    """One row per case and facility from each case's ``summary.json``."""
    rows = []
    for case_id, values, _ in cases:
        summary = json.loads((out_dir / "cases" / case_id / "summary.json").read_text())
        queue = summary["queue"]
        for i, r in enumerate(queue["facilities"]):
            rows.append({"case_id": case_id, **{k: json.dumps(v) for k, v in values.items()},
                         "queue_position": i + 1, "bus": r["bus"], "name": r["name"],
                         "requested_mw": r["requested_mw"],
                         "allocated_mw": r.get("allocated_mw"), "granted": r.get("granted"),
                         "binding_element": r.get("binding_element"),
                         "binding_quantity": r.get("binding_quantity"),
                         "common_scale": queue.get("common_scale"),
                         **_flexible_columns(r, queue)})
    return pd.DataFrame(rows)


def _flexible_columns(row: dict[str, Any], queue: dict[str, Any]) -> dict[str, Any]:
    """A facility's flexible-study figures as comparison columns (none without them)."""
    out: dict[str, Any] = {}
    flex = row.get("flexible")
    if flex is not None:
        out.update({"firm_mw": flex["firm_mw"], "curtailed_mwh": flex["curtailed_mwh"],
                    "curtailed_share_percent": flex["curtailed_share_percent"],
                    "curtailed_h": flex["curtailed_h"],
                    "flexible_binding_element": flex["binding_element"]})
    co = queue.get("cosimulate")
    if co is not None:
        out.update({"closed_loop_curtailed_mwh": row["cosimulate"]["curtailed_mwh"],
                    "closed_loop_violation_steps": co["violation_steps"],
                    "open_loop_violation_steps": co["open_loop_violation_steps"]})
    return out


def is_queue(source: str | Path, overrides: Mapping[str, Any] | None = None) -> bool:
    """Whether the scenario is an interconnection queue (``[[facility]]`` tables)."""
    return load_scenario(source, overrides=overrides).queued


def run_queue_sweep(source: str | Path, out_dir: str | Path, *,
                    sets: Mapping[str, Sequence[Any]] | None = None,
                    overrides: Mapping[str, Any] | None = None, replicates: int | None = None,
                    workers: int = 2, scheduler: str | None = None,
                    start_method: str | None = None, progress: bool = True,
                    overwrite: bool = False, create_parents: bool = False):
    """Run (or resume) a queue sweep: the scenario's ``[sweep] values`` replaced key by key
    by ``sets``; the other arguments as :func:`scenarios.sweep.run_sweep`'s. Returns a
    :class:`scenarios.sweep.SweepResult` (``bands`` empty, ``comparison`` a row per case
    and facility)."""
    from scenarios import report, sweep  # noqa: PLC0415

    sweep._check_start_method(start_method)
    sweep._check_counts(replicates, workers)
    base = load_scenario(source, overrides=overrides)
    axes = {normalise_key(k): v for k, v in {**base.sweep.values, **dict(sets or {})}.items()}
    replicates = base.sweep.replicates if replicates is None else int(replicates)
    if scheduler is not None:
        sweep._check_scheduler(scheduler)
    output = OutputDir(out_dir, kind="sweep", overwrite=overwrite, create_parents=create_parents,
                       protect=[resolve_source(source)],
                       recognise=lambda f: unmarked_output(f, sweep._SWEEP_FILES.__contains__,
                                                           sweep._PLAN))
    out_dir = output.path
    source_text = str(resolve_source(source))
    cases = plan_queue_cases(source_text, axes, overrides, replicates)
    plan = jsonable({
        "scenario": cases[0][2].name, "source": source_text, "replicates": 1, "queue": True,
        "cases": [{"case_id": c, "overrides": v,
                   "facility": {"facility": s.model_dump(mode="json")["facility"],
                                "queue": s.model_dump(mode="json")["queue"]}}
                  for c, v, s in cases],
        "aiload_version": aiload.__version__})
    sweep._check_plan(output, plan)
    tasks = []
    for case_id, values, scenario in cases:
        folder = out_dir / "cases" / case_id
        if not _finished(folder, scenario):
            tasks.append(({**dict(overrides or {}), **values}, str(folder)))
    if progress:
        print(f"aiload sweep: {len(cases)} queue cases, {len(tasks)} to compute (each a whole "
              "aiload run)", flush=True, file=sys.stderr)
    _execute(source_text, tasks, workers, scheduler, start_method)
    comparison = comparison_of(cases, out_dir)
    write_atomic(out_dir / "comparison.csv", lambda tmp: comparison.to_csv(tmp, index=False))
    from scenarios.report_queue import render_sweep  # noqa: PLC0415

    page = render_sweep(cases[0][2].name, cases, comparison, out_dir,
                        figs=lambda items: report._figs(items, base.outputs.dpi),
                        page=report._page)
    write_atomic(out_dir / "report.html", lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    return sweep.SweepResult(out_dir, [sweep.Case(c, v, None) for c, v, _ in cases], 1,
                             len(tasks), pd.DataFrame(), comparison)
