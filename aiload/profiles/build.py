"""Build the bundled profile data from the real measurements in ``../shared/data``.

Run ``python -m aiload.profiles.build --data ../shared/data``. It writes, into
``aiload/profiles/data/``:

- ``nlr_online_rate.csv``, ``nlr_online_finite.csv``, ``nlr_offline.csv`` — the columns of
  the NLR run metadata (DOI 10.7799/3025227, CC BY 4.0) that the scaling fits use, renamed
  with units;
- ``mlperf_training_points.csv`` — per-node mean power, duration and job energy of the
  MLPerf Training v4.0 SMC runs, computed from their power logs (Apache-2.0);
- ``measured_profiles.parquet`` + ``measured_profiles.json`` — the measured per-node
  profiles (MLPerf 8xH100 training, MLPerf 8xH200 inference, idle levels);
- ``idle.json`` — the per-node idle power of each hardware, with its derivation;
- ``node_boundary.json`` — per hardware, where its profiles are measured and the layers up
  to the rack input (rest of node, PSU conversion, network, storage), with their sources;
- ``subsample.json`` — the measured spectrum of the fluctuation below a profile's step
  (:mod:`aiload.profiles.refine`).

``cited_training_points.csv`` is written by hand (the numbers are cited, not read from files).
Every file is written to a temporary name and renamed, so a failed build leaves the old one.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from aiload.errors import InputError
from aiload.profiles import _measured, _node_power, _subsample
from aiload.traces import read_nlr_metadata

__all__ = ["build", "build_nlr_tables", "main"]

NLR = Path("nlr-genai-power-profiles/01_aggregated_datasets")
DATASET_SHORT = {"likaixin/InstructCoder": "instructcoder",
                 "mgoin/mlperf-inference-llama2-data": "mlperf-llama2"}


def _write_atomic(path: Path, write) -> None:
    """Write via ``write(tmp_path)`` then rename, so readers never see a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the bundle must be readable by all
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _csv(df: pd.DataFrame, path: Path, header: str) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            for line in header.strip().splitlines():
                fh.write(f"# {line}\n")
            df.to_csv(fh, index=False, float_format="%.10g")

    _write_atomic(path, write)


def build_nlr_tables(data: Path, out: Path) -> None:
    """Write the NLR inference tables the scaling fits use [W, s, requests/s]."""
    credit = ("From the NLR 'Dataset of Generative AI Workload Power Profiles' (Vercellino et al., "
              "arXiv:2604.07345; DOI 10.7799/3025227; CC BY 4.0), metadata.csv, columns renamed.\n"
              "Power: GPU (NVML) + CPU (RAPL) component sum of one 4xH100 node [W].")
    rate = read_nlr_metadata(data / NLR / "inference_online_rate_llama3_70b/metadata.csv")
    rate_out = pd.DataFrame({
        "dataset": rate["dataset_path"].map(DATASET_SHORT),
        "request_rate_per_s": rate["request_rate_per_s"],
        "mean_power_w": rate["mean_power_w"],
        "peak_power_w": rate["peak_power_w"],
        "window_s": rate["duration_s"],
    })
    _csv(rate_out, out / "nlr_online_rate.csv", credit + "\nSustained-rate runs (3-min window).")

    fin = read_nlr_metadata(data / NLR / "inference_online_finite_llama3_70b/metadata.csv")
    fin_out = pd.DataFrame({
        "dataset": fin["dataset_path"].map(DATASET_SHORT),
        "output_tokens": fin["output_len_tokens"],
        "request_rate_per_s": fin["request_rate_per_s"],
        "repeat": fin["repeat"],
        "request_throughput_per_s": fin["request_throughput"],
        "median_e2e_latency_s": fin["median_e2el_ms"] / 1e3,
        "p90_e2e_latency_s": fin["p90_e2el_ms"] / 1e3,
        "median_ttft_s": fin["median_ttft_ms"] / 1e3,
        "mean_power_w": fin["mean_power_w"],
        "peak_power_w": fin["peak_power_w"],
    })
    _csv(fin_out, out / "nlr_online_finite.csv", credit + "\nFinite-pool runs: 1000 prompts per run.")

    off = read_nlr_metadata(data / NLR / "inference_offline_llama3_70b/metadata.csv")
    off_out = pd.DataFrame({
        "batch_size": off["batch_size"],
        "max_output_tokens": off["max_output_tokens"],
        "seed": off["seed"],
        "repeat": off["repeat"],
        "elapsed_s": off["duration_s"],
        "mean_power_w": off["mean_power_w"],
        "peak_power_w": off["peak_power_w"],
    })
    _csv(off_out, out / "nlr_offline.csv", credit + "\nOffline (batch) runs: all prompts submitted at once.")


def build(data: Path, out: Path | None = None) -> Path:
    """Build every bundled file from ``data`` (the ``shared/data`` folder); return ``out``."""
    data = Path(data)
    if not (data / NLR).is_dir():
        raise InputError(
            f"{data} does not look like the shared data folder (no {NLR}); pass "
            "--data ../shared/data from the project root."
        )
    out = Path(out) if out is not None else Path(__file__).resolve().parent / "data"
    out.mkdir(parents=True, exist_ok=True)
    build_nlr_tables(data, out)
    profiles, points, idle = _measured.build_measured(data)
    _csv(points, out / "mlperf_training_points.csv",
         "MLPerf Training v4.0, Sustainable Metal Cloud SMC-H100-AC-Power (mlcommons/training_results_v4.0,\n"
         "commit 6fe95437, Apache-2.0): per-node AC power logs, run_start->run_stop window.\n"
         "power_w_per_node = job mean / nodes [W]; duration_s [s]; energy_kwh = whole job [kWh].")
    _measured.write_profiles(profiles, out, _write_atomic)
    _write_atomic(out / "idle.json",
                  lambda tmp: tmp.write_text(json.dumps(idle, indent=1, sort_keys=True)))
    boundary = _node_power.node_boundaries(data)
    _write_atomic(out / "node_boundary.json",
                  lambda tmp: tmp.write_text(json.dumps(boundary, indent=1, sort_keys=True)))
    substep = _subsample.measure_substep(data)
    _write_atomic(out / "subsample.json",
                  lambda tmp: tmp.write_text(json.dumps(substep, indent=1, sort_keys=True)))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``python -m aiload.profiles.build --data ../shared/data``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"),
                        help="the shared data folder (default ../shared/data)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the package's data/)")
    args = parser.parse_args(argv)
    out = build(args.data, args.out)
    sizes = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    print(f"wrote {out} ({sizes / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
