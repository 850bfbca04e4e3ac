"""Build the request-rate shapes bundled in ``aiload/facility/data/`` from the real traces.

Run from the project root: ``python docs/scripts/make_facility_demand_shape.py``.

Outputs (small, derived, with attribution in each file header):

- ``servegen_mlarge_rate_shape.csv``: ServeGen m-large request rate summed over the 50 largest
  clients (93.7 % of m-large's requests), per 10-min window over 14 days, divided by its mean
  (mean = 1, dimensionless). ``rate_ratio`` (used) is the circular median of five
  consecutive windows (50 min) of that sum; ``raw_ratio`` the sum itself. Why: the raw sum's
  highest windows are 10-20-min spikes of single clients (client 104 at 465 requests/s, 44
  times its own mean, for one window: a batch pushed through the online API), which alone set
  its peak/mean of 3.13; a median over five windows removes every excursion of one or two
  windows and keeps those of three windows (30 min) or more. Peak/mean of the 10-min shape:
  3.13 raw, 2.51 used; median/mean 0.94, P90/mean 1.62 either way (the NLR facility's 1-min
  utilisation: 2.5, 0.88 and 1.67). Five rather than three windows was chosen on the NLR
  u = 0.2 case (its maximum: +0.2 % with five, +5.4 % with three, docs/facility.md).
- ``azure_llm_2024_week_shape.csv``: the Azure LLM inference 2024 request rates (coding and
  conversation, each a week at 10 min, **digitised from the trace's published plots**), moved
  from UTC to the services' assumed local clock (US Eastern daylight time, UTC-4: see
  ``AZURE_OFFSET_H``), laid on the hour of the week (Monday 00:00 first) and summed; mean 1.
  Each service covers every 10-min window of the week once, so the sum is one typical week.
  ``minute_half_range``: half the spread of the per-minute rate within each window relative to
  its mean, from the plotted line's lower and upper edges (``req_per_min_col_low/high``, each
  pixel column ~7 min), the two services' half-ranges added in quadrature (independent users).
  The header also gives ``day_level_sigma``: the day-to-day variation of the weekday peak,
  the log standard deviation of each complete Monday-Thursday's highest 10-min rate about its
  service's mean over those days, pooled over the two services (Friday is lower in both
  services and is left out as part of the week's structure) [-].
- ``burst_ratio_1min.csv``: sub-10-min burstiness. Azure (code, conversation) and Mooncake
  request arrivals counted per minute and divided by the mean of their 10-min window; blocks of
  ten consecutive ratios (each block has mean 1 by construction).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "aiload" / "facility" / "data"

SERVEGEN_HEADER = """\
# Request-rate shape, dimensionless (mean = 1), one row per 10-min window, 14 days,
# t = 0 is local midnight of the service (ServeGen README). Derived by summing the `rate`
# column [requests/s] of the 50 largest m-large clients (raw_ratio: that sum / its mean);
# rate_ratio (used by aiload) is the circular median of five consecutive windows of the sum
# / its mean: spikes of one or two windows (single clients' batches) removed. Peak/mean {raw_peak:.3f} raw,
# {peak:.3f} used.
# Source: ServeGen (alibaba/ServeGen, data/language/m-large, commit f891d118), Apache-2.0.
# Cite: Xiang et al., "ServeGen: Workload Characterization and Generation of Large Language
# Model Serving in Production", arXiv:2505.09999 (2025). Built by
# docs/scripts/make_facility_demand_shape.py. Mean of the summed rate: {mean:.3f} requests/s.
"""

#: the Azure 2024 trace is in UTC and names no region; its coding service's weekday plateau
#: (17-20 h UTC) is 13-16 h at UTC-4, US Eastern daylight time in May: taken as the users'
#: clock (an assumption, stated in the file and in docs/facility.md)
AZURE_OFFSET_H = -4
AZURE_FILES = ("azure_llm_2024_code_10min_digitized.csv", "azure_llm_2024_conv_10min_digitized.csv")

AZURE_HEADER = """\
# Request-rate shape of a week, dimensionless (mean = 1), one row per 10-min window, Monday
# 00:00 local time first (1,008 rows). DIGITISED FROM PUBLISHED PLOTS, not measured: the Azure
# LLM inference trace 2024 request rates of the coding and conversation services (one week
# each, read off the per-minute plots of AzurePublicDataset's notebook
# analysis/AzureLLMInferenceDataset2024.ipynb; ../shared/data/azure-llm-inference-2024-digitised),
# moved from UTC to UTC{offset:+d} h (assumed users' clock: US Eastern daylight time; the trace
# names no region), laid on the hour of the week and summed (each service covers every window
# once). minute_half_range: half the per-minute spread within the window / its mean, from the
# plotted line's edges, services in quadrature. day_level_sigma: {sigma:.4f} (log std of the
# daily weekday peak, complete Mon-Thu days, both services pooled, {dof} degrees of freedom).
# Weekend/weekday {weekend:.3f}; hour-of-day mean on weekdays 12-20 h / 0-6 h {plateau:.3f};
# median/mean {median:.3f}; peak/mean {peak:.3f}.
# Source: Azure/AzurePublicDataset, commit b469a113, CC BY 4.0. Cite: J. Stojkovic, C. Zhang,
# I. Goiri, J. Torrellas, E. Choukse, "DynamoLLM: Designing LLM Inference Clusters for
# Performance and Energy Efficiency", HPCA 2025 (arXiv 2408.00741), and the Azure Public Dataset.
# Built by docs/scripts/make_facility_demand_shape.py. Mean of the summed rate: {mean:.1f}
# requests/min.
"""

BURST_HEADER = """\
# Sub-10-min burstiness: per-minute request count divided by the mean of its 10-min window
# (dimensionless; each block of 10 rows has mean 1). Columns: block id, minute in block, ratio.
# Sources: Azure LLM inference trace 2023 (code, conversation), CC BY 4.0, cite Patel et al.,
# "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024; Mooncake
# conversation trace, Apache-2.0, cite Qin et al., "Mooncake: Trading More Storage for Less
# Computation", USENIX FAST 2025. Built by docs/scripts/make_facility_demand_shape.py.
"""


def servegen_shape() -> tuple[np.ndarray, float]:
    """Summed m-large rate per 10-min window [requests/s] and its mean."""
    files = sorted((DATA / "servegen-bailian/data/language/m-large").glob("chunk-*-trace.csv"))
    total = None
    for path in files:
        rate = pd.read_csv(path, header=None, usecols=[0, 1], names=["t_s", "rate"])
        rate = rate.set_index("t_s")["rate"]
        total = rate if total is None else total.add(rate, fill_value=0.0)
    assert total is not None and len(total) == 2016, "expected 14 days of 10-min windows"
    return total.to_numpy(), float(total.mean())


#: windows in the running median of the shape (odd)
MEDIAN_WINDOWS = 5


def running_median(values: np.ndarray, width: int = MEDIAN_WINDOWS) -> np.ndarray:
    """Circular median of each window and its ``width // 2`` neighbours on either side (the
    shape repeats) [same unit]."""
    half = width // 2
    stack = np.vstack([np.roll(values, k) for k in range(-half, half + 1)])
    return np.median(stack, axis=0)


def _azure_local(folder: Path, name: str, offset_h: int) -> tuple[pd.DataFrame, pd.Series]:
    """One digitised service and its start times on the users' clock (naive local)."""
    table = pd.read_csv(folder / name, parse_dates=["start_utc"])
    return table, table["start_utc"].dt.tz_convert(None) + pd.Timedelta(hours=offset_h)


def azure_week(folder: Path, offset_h: int = AZURE_OFFSET_H) -> tuple[np.ndarray, np.ndarray]:
    """The two digitised Azure 2024 services summed on the local week, Monday 00:00 local first
    (1,008 values): requests per minute per 10-min window [requests/min], and half the spread
    of the per-minute rate within each window (services added in quadrature) [requests/min]."""
    total, spread2 = np.zeros(1008), np.zeros(1008)
    for name in AZURE_FILES:
        table, local = _azure_local(folder, name, offset_h)
        window = (local.dt.dayofweek * 144 + local.dt.hour * 6 + local.dt.minute // 10).to_numpy()
        assert np.array_equal(np.sort(window), np.arange(1008)), f"{name}: not one whole week"
        np.add.at(total, window, table["req_per_min"].to_numpy(dtype=float))
        half = (table["req_per_min_col_high"] - table["req_per_min_col_low"]).to_numpy() / 2.0
        np.add.at(spread2, window, half**2)
    return total, np.sqrt(spread2)


def day_level_sigma(folder: Path, offset_h: int = AZURE_OFFSET_H) -> tuple[float, int]:
    """Day-to-day variation of the weekday peak: log standard deviation of each complete
    local Monday-Thursday's highest 10-min rate about its service's mean over those days,
    pooled over the services [-], and its degrees of freedom [-]."""
    squares, dof = 0.0, 0
    for name in AZURE_FILES:
        table, local = _azure_local(folder, name, offset_h)
        by_day = table["req_per_min"].groupby(local.dt.normalize())
        days = pd.DataFrame({"peak": by_day.max(), "n": by_day.size()})
        keep = days[(days["n"] == 144) & (days.index.dayofweek <= 3)]
        logs = np.log(keep["peak"].to_numpy())
        squares += float(((logs - logs.mean()) ** 2).sum())
        dof += len(logs) - 1
    return float(np.sqrt(squares / dof)), dof


def week_statistics(ratio: np.ndarray) -> dict[str, float]:
    """Weekend/weekday mean, weekday 12-20 h over 0-6 h, median/mean and peak/mean of a
    mean-1 week of 10-min windows, Monday first [-]."""
    days = ratio.reshape(7, 144)
    weekday = days[:5]
    return {"weekend": days[5:].mean() / weekday.mean(),
            "plateau": weekday[:, 72:120].mean() / weekday[:, 0:36].mean(),
            "median": float(np.median(ratio)), "peak": float(ratio.max())}


def burst_blocks(arrivals_s: np.ndarray) -> np.ndarray:
    """Per-minute/10-min-mean ratios for each complete 10-min block with requests."""
    minutes = np.floor((arrivals_s - arrivals_s.min()) / 60.0).astype(int)
    counts = np.bincount(minutes)
    n_blocks = len(counts) // 10
    blocks = counts[: n_blocks * 10].reshape(n_blocks, 10).astype(float)
    means = blocks.mean(axis=1, keepdims=True)
    keep = means[:, 0] >= 1.0  # a window with < 10 requests says nothing about burstiness
    return blocks[keep] / means[keep]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rate, mean = servegen_shape()
    used = running_median(rate)
    shape = pd.DataFrame({"t_s": np.arange(len(rate)) * 600, "rate_ratio": used / used.mean(),
                          "raw_ratio": rate / mean})
    with open(OUT / "servegen_mlarge_rate_shape.csv", "w", encoding="utf-8") as fh:
        fh.write(SERVEGEN_HEADER.format(mean=mean, raw_peak=rate.max() / mean,
                                        peak=used.max() / used.mean()))
        shape.to_csv(fh, index=False, float_format="%.6f")

    folder = DATA / "azure-llm-inference-2024-digitised"
    week, half = azure_week(folder)
    ratio = week / week.mean()
    stats = week_statistics(ratio)
    sigma, dof = day_level_sigma(folder)
    with open(OUT / "azure_llm_2024_week_shape.csv", "w", encoding="utf-8") as fh:
        fh.write(AZURE_HEADER.format(offset=AZURE_OFFSET_H, mean=week.mean(), sigma=sigma,
                                     dof=dof, **stats))
        pd.DataFrame({"week_s": np.arange(1008) * 600, "rate_ratio": ratio,
                      "minute_half_range": half / week}).to_csv(
            fh, index=False, float_format="%.6f")
    print("azure 2024 week: " + ", ".join(f"{k} {v:.3f}" for k, v in stats.items())
          + f", day_level_sigma {sigma:.4f} ({dof} dof), minute half-range mean "
          f"{(half / week).mean():.3f} max {(half / week).max():.3f}")

    blocks = []
    for name in ("AzureLLMInferenceTrace_code.csv", "AzureLLMInferenceTrace_conv.csv"):
        ts = pd.to_datetime(pd.read_csv(DATA / "azure-llm-inference-2023" / name)["TIMESTAMP"])
        blocks.append(burst_blocks((ts - ts.min()).dt.total_seconds().to_numpy()))
    with open(DATA / "mooncake-traces/conversation_trace.jsonl", encoding="utf-8") as fh:
        ms = np.array([json.loads(line)["timestamp"] for line in fh], dtype=float)
    blocks.append(burst_blocks(ms / 1000.0))
    ratios = np.vstack(blocks)
    table = pd.DataFrame(
        {
            "block": np.repeat(np.arange(len(ratios)), 10),
            "minute": np.tile(np.arange(10), len(ratios)),
            "ratio": ratios.ravel(),
        }
    )
    with open(OUT / "burst_ratio_1min.csv", "w", encoding="utf-8") as fh:
        fh.write(BURST_HEADER)
        table.to_csv(fh, index=False, float_format="%.6f")
    ratio = used / used.mean()
    print(f"servegen mean {mean:.2f} req/s, peak/mean {rate.max() / mean:.3f} raw, "
          f"{ratio.max():.3f} used (median/mean {np.median(ratio):.3f}, P90/mean "
          f"{np.percentile(ratio, 90):.3f}); "
          f"{len(ratios)} burst blocks, ratio CV {ratios.std():.3f}")


if __name__ == "__main__":
    main()
