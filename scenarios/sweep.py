"""Parameter sweeps and Monte Carlo replicates of the facility model on Dask.

A sweep is the cartesian product of parameter values (``--set facility.utilization=0.2,0.4``)
times ``replicates``. Each (case, replicate) is one task that runs ``aiload.facility`` and
writes its own files atomically as soon as it finishes, so a killed sweep resumes where it
stopped: finished tasks are found on disk and not recomputed. Replicate ``k`` of a case uses
``seed = facility.seed + k``. Results combine into percentile bands across replicates
(``bands.parquet``), a comparison table of grid-facing metrics (``comparison.csv``) and a
self-contained ``report.html``.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import aiload
from aiload.errors import InputError
from aiload.metrics import summary as metrics_summary
from aiload.outputs import OutputDir, clean_debris, unmarked_output, write_atomic, write_marker
from scenarios import figures, report, studies
from scenarios.loader import ScenarioError, load_scenario, resolve_source
from scenarios.messages import as_typed as _shown  # a value spelled as after --set
from scenarios.jsonsafe import jsonable
from scenarios.schema import FacilitySection

__all__ = ["Case", "SweepResult", "plan_cases", "run_sweep", "combine", "read_replicates",
           "local_cluster", "START_METHODS"]

_PLAN = "sweep.json"


@dataclass(frozen=True)
class Case:
    """One point of the parameter grid: an id and the dotted overrides that define it."""

    case_id: str
    overrides: dict[str, Any]
    facility: FacilitySection


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep.

    Attributes
    ----------
    out_dir : pathlib.Path
        Folder holding ``sweep.json``, ``cases/``, ``bands.parquet``, ``comparison.csv``.
    cases : list of Case
    replicates : int
    computed : int
        Tasks computed by this call (the rest were found finished on disk).
    bands : pandas.DataFrame
        Percentiles of ``facility_kw`` across replicates [kW]; columns ``(case_id, "p10")``...
    comparison : pandas.DataFrame
        Per case and metric: percentiles across replicates of ``aiload.metrics.summary``.
    """

    out_dir: Path
    cases: list[Case]
    replicates: int
    computed: int
    bands: pd.DataFrame
    comparison: pd.DataFrame


def plan_cases(source: str | Path, sets: Mapping[str, Sequence[Any]] | None = None,
               overrides: Mapping[str, Any] | None = None) -> tuple[Any, list[Case]]:
    """Validate the scenario and every case of the grid before anything runs.

    ``sets`` replace the scenario's ``[sweep] values`` key by key. Returns the base scenario
    and the cases, each validated as a whole scenario (so a bad value fails here).
    """
    base = load_scenario(source, overrides=overrides)
    if base.queued:
        raise InputError(
            f"scenario {base.name!r} is an interconnection queue ([[facility]] tables): its "
            "cases are whole runs with the grid studies; sweep it with "
            "scenarios.sweep_queue.run_queue_sweep (`aiload sweep` chooses it itself).")
    axes = {**base.sweep.values, **dict(sets or {})}
    for key in axes:
        if not key.startswith("facility."):
            raise InputError(
                f"sweep over {key!r}: only facility fields can be swept (e.g. facility.utilization, "
                "facility.seed); run grid and sizing studies per case with `aiload run --set`."
            )
    from_file = [k for k in base.sweep.values if k not in (sets or {})]
    for key, values in axes.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            # no value: no case, and the sweep had nothing to combine (was an IndexError)
            where = "[sweep] values" if key in from_file else "--set"
            raise InputError(
                f"{where} {key!r} = {values!r}: expected a list of one or more values, e.g. "
                f"{key} = [0.2, 0.4] in [sweep] values or --set {key}=0.2,0.4; remove the key "
                "to keep the file's value."
            )
    keys = sorted(axes)
    cases = []
    for i, values in enumerate(itertools.product(*(axes[k] for k in keys))):
        case_over = dict(zip(keys, values))
        try:
            scenario = load_scenario(source, overrides={**dict(overrides or {}), **case_over})
        except ScenarioError as exc:
            raise ScenarioError(_from_sweep_table(str(exc), case_over, from_file)) from None
        studies.check_facility(scenario.facility)
        cases.append(Case(f"case-{i:03d}", case_over, scenario.facility))
    _check_one_time_axis(cases, axes)
    return base, cases


def _check_one_time_axis(cases: Sequence[Case], axes: Mapping[str, Sequence[Any]]) -> None:
    """Every case on the same time steps: the bands and the comparison put the cases side by
    side (cases of other horizons failed in pandas after every case had been computed)."""
    def axis(section: FacilitySection) -> tuple:
        step = pd.Timedelta(pd.tseries.frequencies.to_offset(section.freq))
        return pd.Timestamp(section.start), pd.Timestamp(section.end), step

    if len({axis(c.facility) for c in cases}) > 1:
        varied = [k for k in axes if len(axes[k]) > 1
                  and k.split(".")[-1] in ("start", "end", "freq")] or sorted(axes)
        raise InputError(
            f"the sweep's cases have different time steps ({', '.join(varied)} "
            f"{'takes' if len(varied) == 1 else 'take'} several values); a sweep compares its cases step by step, so they share facility.start, "
            "end and freq. Sweep other fields, and give one value of these with --set (a "
            "separate `aiload sweep` -o folder for each horizon or resolution)."
        )


def _from_sweep_table(message: str, case: Mapping[str, Any], from_file: Sequence[str]) -> str:
    """A case's validation message with the values of the file's [sweep] values named as such,
    not as the --set the loader takes them for."""
    for key in from_file:
        for text in (f"--set {key}={_shown(case[key])}", f"--set {key}"):
            message = message.replace(text, f"[sweep] values {key} = {_shown(case[key])}")
    return message


def _value_at(section: FacilitySection, parts: Sequence[str]) -> Any:
    """The validated value at a dotted path below [facility] (``streams.0.utilization``)."""
    value: Any = section
    for part in parts:
        value = value[int(part)] if isinstance(value, (list, tuple)) else getattr(value, part)
    return value


#: what a sweep writes in its folder (the marker lists these)
_SWEEP_FILES = (_PLAN, "cases", "bands.parquet", "comparison.csv", "report.html")


def _task_path(out_dir: Path, case: Case, replicate: int) -> Path:
    return out_dir / "cases" / case.case_id / f"rep-{replicate:04d}.parquet"


def run_task(section: FacilitySection, replicate: int, path: str) -> str:
    """Run one replicate of one case and write ``rep-NNNN.parquet`` (+ ``.metrics.csv``).

    The Parquet file is written last, so its presence marks the task finished.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    load = studies.run_facility(section, progress=False, seed=section.seed + replicate,
                                replicates=1)
    power = load.power[["facility_kw"]]
    table = metrics_summary(power["facility_kw"])
    metrics_path = target.with_name(target.stem + ".metrics.csv")
    write_atomic(metrics_path, lambda tmp: table.to_csv(tmp, index=False))
    write_atomic(target, lambda tmp: power.to_parquet(tmp))
    return str(target)


def _plan_key(plan: dict) -> tuple:
    # what decides the task files: the validated facility runs and the replicate count
    return (plan["replicates"], [(c["case_id"], c["facility"]) for c in plan["cases"]])


def _check_plan(output: OutputDir, plan: dict) -> None:
    out_dir = output.path
    path = out_dir / _PLAN
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            same = _plan_key(old) == _plan_key(plan)
        except (ValueError, KeyError, TypeError):
            same = False
        if not same and not output.overwrite:
            raise InputError(
                f"{out_dir} holds a different sweep (its {_PLAN} does not match this scenario, "
                "these --set values or replicates); choose another -o folder, or pass "
                "--overwrite to replace that sweep's files."
            )
        if not same:
            _remove_tasks(out_dir)
    else:
        same = False
    output.prepare()
    if not same:
        write_atomic(path, lambda tmp: Path(tmp).write_text(json.dumps(plan, indent=2)))
    write_marker(out_dir, "sweep", _SWEEP_FILES)


def _remove_tasks(out_dir: Path) -> None:
    """Delete an earlier sweep's task files (only aiload's names; other files stay)."""
    for case_dir in (out_dir / "cases").glob("case-*"):
        for task in [*case_dir.glob("rep-*.parquet"), *case_dir.glob("rep-*.metrics.csv")]:
            task.unlink()
        try:
            case_dir.rmdir()
        except OSError:
            pass  # something of the user's is in it


def _damage(target: Path) -> str | None:
    """Why a finished-looking task file cannot be used (None when it can)."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    metrics = target.with_name(target.stem + ".metrics.csv")
    try:
        rows = pq.read_metadata(target).num_rows
    except Exception as exc:  # pyarrow raises several types on a cut file
        return f"not a readable Parquet file ({type(exc).__name__}: {exc})"
    if rows == 0:
        return "holds no rows"
    try:
        table = pd.read_csv(metrics)
    except Exception as exc:
        return f"its metrics file {metrics.name} cannot be read ({type(exc).__name__}: {exc})"
    if "value" not in table or table.empty:
        return f"its metrics file {metrics.name} has no 'value' rows"
    return None


#: how local worker processes may start (``multiprocessing`` start methods)
START_METHODS = ("fork", "spawn", "forkserver")

# one worker process per core: numeric libraries must not start a thread pool each
_WORKER_ENV = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                       "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")}


def _warm_worker(client_pid: int) -> None:
    """Import the facility model in a worker and freeze the import-time heap.

    ``gc.freeze`` moves the long-lived module objects out of the collector's generations, so
    the many short-lived SimPy events of each task do not trigger rescans of them. It is
    skipped in the client's own process (threaded workers) to leave the caller's heap alone.
    """
    import gc

    import aiload.facility  # noqa: F401  (import cost paid here, not in the first task)
    import scenarios.studies  # noqa: F401

    if os.getpid() != client_pid:
        gc.freeze()


def _check_start_method(start_method: str | None) -> None:
    if start_method not in (None, *START_METHODS):
        raise InputError(
            f"start_method: expected one of {', '.join(START_METHODS)} (or None for the "
            f"default: fork on Linux), got {start_method!r}; e.g. --start-method spawn."
        )


#: how long `aiload sweep --scheduler` tries to reach the scheduler before it gives up [s]
SCHEDULER_TIMEOUT_S = 10.0


def _check_scheduler(address: str) -> None:
    """Reach the scheduler once before anything is written (a bad address was a traceback from
    inside Dask, after the sweep's plan had been written)."""
    from distributed import Client  # noqa: PLC0415
    from distributed.comm.addressing import parse_address, parse_host_port  # noqa: PLC0415

    from scenarios.scheduler_probe import probe_scheduler, refused  # noqa: PLC0415

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location) if scheme == "tcp" else ("", 0)
    except (ValueError, TypeError) as exc:
        raise refused(address, f"not a scheduler address ({exc})") from None
    # a short, bounded look first: Dask's client reads any service's first bytes as a
    # message length and allocates it (a raw MemoryError for an HTTP server)
    probe_scheduler(address, scheme, host, port)
    try:
        Client(address, timeout=f"{SCHEDULER_TIMEOUT_S:g}s").close()
    except (OSError, ValueError, TypeError, MemoryError, OverflowError) as exc:
        # TimeoutError is an OSError; MemoryError/OverflowError: a service that greets as a
        # scheduler does and then sends something else
        raise InputError(
            f"--scheduler {address!r}: no Dask scheduler answers there ({type(exc).__name__}: "
            f"{exc}); expected the address of a running `dask scheduler`, e.g. "
            "tcp://10.0.0.5:8786, or leave --scheduler out for a local cluster (--workers N). "
            "Nothing was written."
        ) from None


def _close_inherited_keep_alive_pipes() -> None:
    """In a freshly forked child: close the write ends of Dask's parent-alive pipes it inherited.

    Each Dask worker process exits when the write end of its pipe is closed everywhere, which
    is meant to happen when the client dies, even by SIGKILL (``_keep_child_alive`` in
    ``distributed/process.py``). A forked child inherits every open descriptor: a worker forked
    while a sibling's pipe is open holds that sibling's write end, and when both pipes exist
    before either fork (the nannies start concurrently) each worker keeps the other alive for
    ever after the client is killed. Closing the copies here leaves only the client holding
    them, whatever the order of the forks. Registered with :func:`os.register_at_fork`.
    """
    nanny = sys.modules.get("distributed.nanny")
    if nanny is None:
        return
    for node in list(getattr(nanny.Nanny, "_instances", ())):
        async_process = getattr(getattr(node, "process", None), "process", None)
        keep_alive = getattr(async_process, "_keep_child_alive", None)
        if keep_alive is not None:
            try:
                keep_alive.close()  # this process's copy only; the client keeps its own
            except OSError:
                pass


_AT_FORK_REGISTERED = False  # _close_inherited_keep_alive_pipes, once per process


def local_cluster(workers: int, *, start_method: str | None = None):
    """A local Dask cluster of ``workers`` single-threaded worker processes, tuned for sweeps.

    ``start_method`` is how the worker processes start (Dask's
    ``distributed.worker.multiprocessing-method``). By default they are forked on Linux: a
    forked worker starts with aiload, pandas and scipy already imported and the bundled
    profiles loaded, in ~0.1 s, where a spawned one spends ~2.5 s re-importing them before its
    first task (on the benchmark's one-second tasks that alone cost a quarter of the speed-up;
    docs/benchmarks.md). Elsewhere (macOS, Windows) Dask's configured method is used. A forked
    worker closes the copies it inherited of its siblings' parent-alive pipes
    (:func:`_close_inherited_keep_alive_pipes`), so every worker exits when the client is killed.

    The statistical profiler samples every worker's stack each 10 ms under the GIL: a
    measurable tax on the pure-Python SimPy loop that nobody reads in a batch sweep. Dask's
    default pre-spawn environment also sets ``MALLOC_TRIM_THRESHOLD_=65536``, which fixes
    glibc's mmap threshold at 128 KiB: every array above it is a fresh mmap whose pages fault
    in again, and the workers spent ~30 % of each task in the kernel (0.6 s of system time
    per 2 s task, 0.05 s without it; docs/benchmarks.md). Only the thread counts are set
    before the workers start, so their allocator behaves as in a plain Python process.
    """
    import dask
    from distributed import LocalCluster

    _check_start_method(start_method)
    if start_method is None:
        start_method = ("fork" if sys.platform.startswith("linux")
                        else dask.config.get("distributed.worker.multiprocessing-method"))
    global _AT_FORK_REGISTERED
    if start_method == "fork" and not _AT_FORK_REGISTERED:
        os.register_at_fork(after_in_child=_close_inherited_keep_alive_pipes)
        _AT_FORK_REGISTERED = True
    cfg = {"distributed.worker.profile.enabled": False,
           "distributed.nanny.pre-spawn-environ": _WORKER_ENV,
           "distributed.worker.multiprocessing-method": start_method}
    with dask.config.set(cfg):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            dashboard_address=None, env=_WORKER_ENV)


class _Lines:
    """Progress as plain lines (stderr is a log file, not a terminal): at most one per 10 %."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.shown = total, 0, 0
        print(f"aiload sweep: {total} tasks to compute", file=sys.stderr, flush=True)

    def update(self) -> None:
        self.done += 1
        if self.done == self.total or self.done - self.shown >= max(1, self.total // 10):
            self.shown = self.done
            print(f"aiload sweep: {self.done}/{self.total} tasks done", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        pass


def _progress(total: int, progress: bool):
    """A tqdm bar on a terminal, plain lines elsewhere, nothing without ``progress``."""
    try:
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if progress and not terminal:
        return _Lines(total)
    from tqdm import tqdm  # noqa: PLC0415

    return tqdm(total=total, desc="aiload sweep", unit="task", disable=not progress,
                file=sys.stderr)


def _execute(tasks: list[tuple[FacilitySection, int, str]], *, workers: int,
             scheduler: str | None, start_method: str | None, progress: bool) -> None:
    bar = _progress(len(tasks), progress)
    if scheduler is None and workers <= 0:
        for task in tasks:
            run_task(*task)
            bar.update()
        bar.close()
        return
    from distributed import Client, as_completed

    cluster = None
    if scheduler is None:
        cluster = local_cluster(workers, start_method=start_method)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        # imports in every worker at once, before the first task waits on them
        client.run(_warm_worker, os.getpid())
        futures = [client.submit(run_task, *task, pure=False) for task in tasks]
        for future in as_completed(futures):
            future.result()
            bar.update()
    finally:
        bar.close()
        client.close()
        if cluster is not None:
            cluster.close()


def read_replicates(out_dir: str | Path, case: Case, replicates: int) -> pd.DataFrame:
    """``facility_kw`` of every replicate of a case, one column each (``rep-0000``...) [kW]."""
    paths = [_task_path(Path(out_dir), case, k) for k in range(replicates)]
    return pd.concat([pd.read_parquet(p)["facility_kw"].rename(p.stem) for p in paths], axis=1)


def combine(out_dir: str | Path, cases: Sequence[Case], replicates: int,
            percentiles: Sequence[float] = (10.0, 50.0, 90.0)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Percentile bands [kW] and the metric comparison table from the finished task files."""
    out_dir = Path(out_dir)
    bands, rows = {}, []
    for case in cases:
        paths = [_task_path(out_dir, case, k) for k in range(replicates)]
        stacked = read_replicates(out_dir, case, replicates)
        values = np.percentile(stacked.to_numpy(), percentiles, axis=1)
        for p, row in zip(percentiles, values):
            bands[(case.case_id, f"p{p:g}")] = row
        tables = [pd.read_csv(p.with_name(p.stem + ".metrics.csv")) for p in paths]
        keys = [c for c in ("group", "metric", "window", "unit") if c in tables[0]]
        merged = pd.concat(tables, keys=range(replicates), names=["replicate", "row"])
        grouped = merged.groupby(keys, dropna=False, sort=False)["value"]
        for p in percentiles:
            col = grouped.quantile(p / 100.0).rename(f"p{p:g}")
            # the validated value, so "…Z" and "…+00:00" spellings of one time agree
            rows.append(col.to_frame().assign(case_id=case.case_id, **{
                k: json.dumps(jsonable(_value_at(case.facility, k.split(".")[1:])))
                for k in case.overrides}))
    index = pd.read_parquet(_task_path(out_dir, cases[0], 0)).index
    band_frame = pd.DataFrame(bands, index=index)
    band_frame.columns = pd.MultiIndex.from_tuples(band_frame.columns, names=["case_id", "band"])
    comparison = pd.concat(rows).reset_index()
    comparison = comparison.groupby(["case_id", *keys], dropna=False, sort=False).first()
    comparison = comparison.reset_index()
    # what identifies a row, then the swept values, then the percentiles in order
    bands_cols = [f"p{p:g}" for p in percentiles]
    swept = [c for c in comparison.columns if c not in ("case_id", *keys, *bands_cols)]
    return band_frame, comparison[["case_id", *keys, *swept, *bands_cols]]


def _check_counts(replicates: int | None, workers: int) -> None:
    """``replicates`` >= 1 (or None: the file's) and ``workers`` >= 0, before anything is written
    (a negative ``workers`` ran serially without a word)."""
    if replicates is not None and (isinstance(replicates, bool) or int(replicates) != replicates
                                   or replicates < 1):
        raise InputError(
            f"replicates = {replicates!r} (--replicates): expected a whole number >= 1 of "
            "replicates per case, e.g. --replicates 20; leave it out to use the file's [sweep] "
            "replicates."
        )
    if isinstance(workers, bool) or int(workers) != workers or workers < 0:
        raise InputError(
            f"workers = {workers!r} (--workers): expected 0 (the cases one after another in this "
            "process) or a number of worker processes >= 1, e.g. --workers 4."
        )


def run_sweep(source: str | Path, out_dir: str | Path, *,
              sets: Mapping[str, Sequence[Any]] | None = None,
              overrides: Mapping[str, Any] | None = None, replicates: int | None = None,
              workers: int = 2, scheduler: str | None = None,
              start_method: str | None = None, progress: bool = True,
              overwrite: bool = False, create_parents: bool = False) -> SweepResult:
    """Run (or resume) a sweep and combine its results.

    Parameters
    ----------
    source : str or pathlib.Path
        Scenario file or bundled name.
    out_dir : str or pathlib.Path
        Sweep folder: new, empty, or an earlier sweep (marker file ``.aiload-output.json``);
        tasks found finished there are not recomputed, damaged task files (a cut Parquet
        file) are named on stderr and recomputed. Its parent folder must exist.
    sets : mapping, optional
        Dotted facility field -> values, replacing the scenario's ``[sweep] values``.
    overrides : mapping, optional
        Dotted field -> one value applied to every case (e.g. a shorter ``facility.end``).
    replicates : int, optional
        Replicates per case; default the scenario's ``[sweep] replicates``.
    workers : int
        Dask worker processes of the local cluster; ``0`` runs serially in this process.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:8786``) instead of a local cluster.
        Workers write the task files, so ``out_dir`` must be on a file system they share.
    start_method : {"fork", "spawn", "forkserver"}, optional
        How the local cluster's worker processes start (:func:`local_cluster`); default fork
        on Linux, Dask's configured method elsewhere.
    progress : bool
        Show a progress bar on stderr.
    overwrite : bool
        Also write into a non-empty folder that is not an aiload sweep (only the sweep's own
        file names are replaced there), or replace the files of a different sweep.
    create_parents : bool
        Create a missing parent folder (the command line's default ``aiload-out/NAME-sweep``).
    """
    _check_start_method(start_method)  # before anything is written
    _check_counts(replicates, workers)
    if scheduler is not None:
        _check_scheduler(scheduler)
    # absolute: workers may run in another directory
    output = OutputDir(out_dir, kind="sweep", overwrite=overwrite, create_parents=create_parents,
                       protect=[resolve_source(source)],
                       recognise=lambda f: unmarked_output(f, _SWEEP_FILES.__contains__, _PLAN))
    out_dir = output.path
    base, cases = plan_cases(source, sets, overrides)
    replicates = base.sweep.replicates if replicates is None else int(replicates)
    plan = jsonable({
        "scenario": base.name, "source": str(resolve_source(source)), "replicates": replicates,
        "cases": [{"case_id": c.case_id, "overrides": c.overrides,
                   "facility": c.facility.model_dump(mode="json")} for c in cases],
        "aiload_version": aiload.__version__,
    })
    _check_plan(output, plan)
    for case_dir in (out_dir / "cases").glob("case-*"):
        # temporary files left by a killed run; the task they belonged to is recomputed
        clean_debris(case_dir, any_pid=True)
        for stale in case_dir.glob(".*.partial"):
            stale.unlink()
    tasks = []
    for c in cases:
        for k in range(replicates):
            path = _task_path(out_dir, c, k)
            if path.is_file():
                reason = _damage(path)
                if reason is None:
                    continue
                print(f"aiload sweep: {path} is damaged ({reason}); computing it again",
                      file=sys.stderr)
                path.unlink()
            tasks.append((c.facility, k, str(path)))
    if progress and len(tasks) < len(cases) * replicates:
        print(f"aiload sweep: resuming, {len(cases) * replicates - len(tasks)} tasks already done",
              file=sys.stderr)
    if tasks:
        _execute(tasks, workers=workers, scheduler=scheduler, start_method=start_method,
                 progress=progress)
    bands, comparison = combine(out_dir, cases, replicates, base.sweep.percentiles)
    flat = bands.copy()
    flat.columns = [f"{c}_{b}_kw" for c, b in flat.columns]
    write_atomic(out_dir / "bands.parquet", lambda tmp: flat.to_parquet(tmp))
    write_atomic(out_dir / "comparison.csv", lambda tmp: comparison.to_csv(tmp, index=False))
    page = report.render_sweep(base.name, cases, replicates, comparison,
                               {c.case_id: read_replicates(out_dir, c, replicates) for c in cases},
                               dpi=base.outputs.dpi, tz=figures.site_timezone(base.site))
    write_atomic(out_dir / "report.html", lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    return SweepResult(out_dir, cases, replicates, len(tasks), bands, comparison)
