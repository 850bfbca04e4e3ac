"""The NLR GenAI power dataset (DOI 10.7799/3025227): aggregated Parquet series and run metadata.

``results/NNNNNN.parquet`` holds one series per run: ``power[W]`` (node, or job sum for
multi-node training; a component sum of 4 GPUs (NVML) + RAPL channels) indexed by
``timestep[s]`` (elapsed seconds). ``metadata.csv`` (one per workload folder) describes the
runs; :func:`read_nlr_metadata` returns it tidy, units in the column names.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from aiload.errors import TraceFormatError
from aiload.traces._trace import Trace, TraceMeta, check_power, check_times

__all__ = ["read_nlr_parquet", "read_nlr_metadata", "NLR_HARDWARE"]

#: node type of every NLR run (Kestrel GPU nodes)
NLR_HARDWARE = "4xH100"
_BOUNDARY = "GPU boards (NVML) + CPU packages and cores (RAPL) of the node(s)"
_MAX_JOB_W = 16 * 5_000.0  # 16 nodes, generously above the 3 kW a busy node reaches

_RENAME = {
    "peak_power[W]": "peak_power_w",
    "mean_power[W]": "mean_power_w",
    "elapsed": "duration_s",
    "request_rate_x": "request_rate_per_s",
    "request_rate": "request_rate_per_s",
    "burstiness_x": "burstiness",
    "hf-output-len": "output_len_tokens",
    "num-prompts": "num_prompts",
    "dataset-name": "dataset_name",
    "dataset-path": "dataset_path",
    "start_time": "start_time_local",
    "end_time": "end_time_local",
    "start_time_exc": "start_time_exc_local",
    "end_time_exc": "end_time_exc_local",
}
# The three inference files and the training file, told apart by a column only they have.
_KINDS = {
    "batch_size": ("offline-inference", "llama3_70b"),
    "hf-output-len": ("online-inference", "llama3_70b"),
    "request_rate": ("online-inference", "llama3_70b"),
    "slurmid": (None, None),
}


def read_nlr_metadata(path: str | os.PathLike) -> pd.DataFrame:
    """Read an NLR ``metadata.csv`` as a tidy table, one row per run.

    Parameters
    ----------
    path : path-like
        One of ``01_aggregated_datasets/<workload>/metadata.csv``.

    Returns
    -------
    pandas.DataFrame
        Columns (where the file has them): ``workload`` (``"fine-tuning"``, ``"training"``,
        ``"offline-inference"``, ``"online-inference"``), ``model``, ``nodes``,
        ``mean_power_w`` [W], ``peak_power_w`` [W], ``duration_s`` [s] (offline: ``elapsed``;
        online-rate: the analysed ``execution_time_seconds`` window; online-finite: vLLM
        ``duration``), ``request_rate_per_s`` [1/s], ``batch_size``, ``output_len_tokens``,
        ``start_time_local``/``end_time_local`` (naive: the site's wall clock), ``run_file``
        (the series' Parquet name) and the file's other columns with ``-`` turned into ``_``.
    """
    path = Path(path)
    try:
        raw = pd.read_csv(path, float_precision="round_trip")
    except pd.errors.EmptyDataError:
        raise TraceFormatError(
            f"{path}: the file is empty; expected an NLR metadata.csv with a header row."
        ) from None
    kind = next((k for k in _KINDS if k in raw.columns), None)
    if kind is None:
        raise TraceFormatError(
            f"{path}: columns {list(raw.columns)[:8]} do not look like an NLR metadata.csv; "
            f"expected one of the columns {list(_KINDS)} (offline, online-finite, online-rate, "
            "training)."
        )
    if len(raw) == 0:
        raise TraceFormatError(f"{path}: the header has no rows under it; expected one per run.")
    df = raw.drop(columns=[c for c in raw.columns if c.startswith("Unnamed")])
    if kind == "hf-output-len":
        df = df.rename(columns={"duration": "duration_s", "execution_time_seconds": "execution_time_s"})
    else:
        df = df.rename(columns={"execution_time_seconds": "duration_s"})
    df = df.rename(columns=_RENAME).rename(
        columns={"request_rate_y": "vllm_request_rate_per_s", "burstiness_y": "vllm_burstiness",
                 "_repeat": "repeat"}
    )
    df.columns = [c.replace("-", "_") for c in df.columns]
    # online-finite repeats vLLM's own num_prompts next to the launcher's num-prompts
    df = df.loc[:, ~df.columns.duplicated()]
    workload, model = _KINDS[kind]
    if workload is None:
        df.insert(0, "workload", np.where(df["model"].str.contains("lora"), "fine-tuning", "training"))
    else:
        df.insert(0, "workload", workload)
        df.insert(1, "model", model)
        df.insert(2, "nodes", 1)
    for col in [c for c in df.columns if c.endswith("_local")]:
        df[col] = pd.to_datetime(df[col], format="mixed")
    run = df.get("path_run", df.get("path_save"))
    if run is not None:
        df["run_file"] = run.astype(str).str.rsplit("/", n=1).str[-1]
    for col in ("mean_power_w", "peak_power_w"):
        if col in df.columns:
            bad = np.flatnonzero(~(df[col].to_numpy(dtype=float) > 0))
            if bad.size:
                raise TraceFormatError(
                    f"{path}: column {col!r} has {df[col].iloc[bad[0]]} on line {bad[0] + 2}; "
                    "expected a positive power [W]."
                )
    df.attrs["source"] = str(path)
    return df


def _run_info(path: Path) -> dict:
    """The metadata row of a ``results/NNNNNN.parquet`` file, when ``metadata.csv`` is near."""
    meta_csv = path.parent.parent / "metadata.csv"
    if path.parent.name != "results" or not meta_csv.is_file():
        return {}
    table = read_nlr_metadata(meta_csv)
    rows = table[table.get("run_file", pd.Series(dtype=str)) == path.name]
    return rows.iloc[0].to_dict() if len(rows) == 1 else {}


def read_nlr_parquet(path: str | os.PathLike) -> Trace:
    """Read one run of the NLR aggregated dataset [W].

    Parameters
    ----------
    path : path-like
        A Parquet file with column ``power[W]`` and index (or column) ``timestep[s]``.

    Returns
    -------
    Trace
        One column ``node`` (single node) or ``job`` (several nodes summed) [W] on a
        TimedeltaIndex named ``elapsed``. Node count and workload come from the
        ``metadata.csv`` one folder up when it is there (else 1 node, workload unknown).
    """
    path = Path(path)
    df = pd.read_parquet(path)
    if "timestep[s]" not in df.columns and df.index.name == "timestep[s]":
        df = df.reset_index()
    missing = [c for c in ("timestep[s]", "power[W]") if c not in df.columns]
    if missing:
        raise TraceFormatError(
            f"{path}: missing column(s) {missing}; found {list(df.columns)} (index "
            f"{df.index.name!r}); expected 'power[W]' indexed by 'timestep[s]' (NLR aggregated "
            "Parquet)."
        )
    seconds = df["timestep[s]"].to_numpy(dtype=np.float64)
    if np.isnan(seconds).any():
        raise TraceFormatError(f"{path}: column 'timestep[s]' has NaN; expected elapsed seconds.")
    index = pd.TimedeltaIndex(pd.to_timedelta(np.round(seconds * 1e9).astype(np.int64)), name="elapsed")
    check_times(index, path)
    info = _run_info(path)
    nodes = int(info.get("nodes", 1))
    name = "node" if nodes == 1 else "job"
    power = pd.DataFrame({name: df["power[W]"].to_numpy(dtype=np.float64)}, index=index)
    check_power(power, path, unit="W", max_plausible_w=_MAX_JOB_W, lines=None)
    interval = float(np.median(np.diff(index.as_unit("ns").asi8))) / 1e9
    meta = TraceMeta(
        source=(str(path),),
        format="nlr-parquet",
        hardware=NLR_HARDWARE,
        n_devices=1,
        n_nodes=nodes,
        workload=info.get("model") if info else None,
        sampling_interval_s=interval,
        reading="averaged",
        boundary=_BOUNDARY,
        extra={k: v for k, v in info.items() if isinstance(v, (int, float, str))}
        | {"column": name, "units": "W"},
    )
    return Trace(power_w=power, meta=meta)

