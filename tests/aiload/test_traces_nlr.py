"""NLR GenAI dataset: the real metadata.csv files, and the aggregated Parquet series.

There is no NLR Parquet series in ../shared/data, so the Parquet tests write one from REAL
samples (the WattAMeter example log of an NLR node: node power = 4 GPUs + RAPL, as NLR sums
it) in NLR's layout and check the reader returns those same values.
"""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from aiload.errors import TraceFormatError
from aiload.traces import read_nlr_metadata, read_trace

AGG = "nlr-genai-power-profiles/01_aggregated_datasets"


def raw_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(
    ("folder", "rows", "workloads"),
    [
        ("training", 41, {"fine-tuning", "training"}),
        ("inference_offline_llama3_70b", 1200, {"offline-inference"}),
        ("inference_online_finite_llama3_70b", 1026, {"online-inference"}),
        ("inference_online_rate_llama3_70b", 200, {"online-inference"}),
    ],
)
def test_metadata_row_counts_and_workloads(data_dir, folder, rows, workloads):
    """Row counts from SOURCE.md."""
    table = read_nlr_metadata(data_dir / AGG / folder / "metadata.csv")
    assert len(table) == rows
    assert set(table["workload"]) == workloads
    assert table.columns.is_unique
    assert (table["nodes"] >= 1).all()


def test_training_metadata_node_counts(data_dir):
    """SOURCE.md: Llama-2 LoRA 2/4/8/16 nodes = 5/5/6/5 runs; Stable Diffusion 6/5/5/4."""
    table = read_nlr_metadata(data_dir / AGG / "training/metadata.csv")
    counts = table.groupby(["model", "nodes"]).size()
    assert counts["llama2_70b_lora"].tolist() == [5, 5, 6, 5]
    assert counts["stable_diffusion"].tolist() == [6, 5, 5, 4]
    assert set(table.loc[table.model == "stable_diffusion", "workload"]) == {"training"}


def test_offline_metadata_values_agree_with_a_plain_csv_read(data_dir):
    """Values equal the csv module's reading; ranges from SOURCE.md (1,955-2,850 W mean)."""
    path = data_dir / AGG / "inference_offline_llama3_70b/metadata.csv"
    table = read_nlr_metadata(path)
    raw = raw_rows(path)
    np.testing.assert_array_equal(table["mean_power_w"], [float(r["mean_power[W]"]) for r in raw])
    np.testing.assert_array_equal(table["duration_s"], [float(r["elapsed"]) for r in raw])
    # SOURCE.md prints them rounded to 1 W
    assert round(table["mean_power_w"].min()) == 1955 and round(table["mean_power_w"].max()) == 2850
    assert round(table["peak_power_w"].min()) == 2113 and round(table["peak_power_w"].max()) == 3098
    assert table["run_file"].iloc[0] == "000000.parquet"
    assert table["start_time_local"].iloc[0] == pd.Timestamp("2025-09-18 16:30:12.777741")


def test_online_rate_metadata_power_rises_with_rate(data_dir):
    """SOURCE.md: ~2.07 kW at 1 req/s, ~2.8-2.85 kW at saturation (>= 31 req/s)."""
    table = read_nlr_metadata(data_dir / AGG / "inference_online_rate_llama3_70b/metadata.csv")
    by_rate = table.groupby("request_rate_per_s")["mean_power_w"].mean()
    assert by_rate.loc[1] == pytest.approx(2070, abs=30)
    assert by_rate.loc[40:].mean() == pytest.approx(2825, abs=60)
    assert (table["duration_s"] > 170).all() and (table["duration_s"] < 190).all()


def test_read_trace_on_metadata_points_to_read_nlr_metadata(data_dir):
    path = data_dir / AGG / "training/metadata.csv"
    with pytest.raises(TraceFormatError, match=r"metadata.csv.*not a power series.*read_nlr_metadata"):
        read_trace(path)


def test_metadata_errors(tmp_path):
    empty = tmp_path / "metadata.csv"
    empty.write_text("")
    with pytest.raises(TraceFormatError, match="metadata.csv: the file is empty"):
        read_nlr_metadata(empty)
    renamed = tmp_path / "renamed.csv"
    renamed.write_text("size,elapsed\n10,1.0\n")
    with pytest.raises(TraceFormatError, match=r"renamed.csv: columns \['size', 'elapsed'\].*expected"):
        read_nlr_metadata(renamed)
    bad = tmp_path / "bad.csv"
    bad.write_text("batch_size,elapsed,mean_power[W]\n10,1.0,2000\n20,2.0,-5\n")
    with pytest.raises(TraceFormatError, match=r"'mean_power_w' has -5.* line 3"):
        read_nlr_metadata(bad)


@pytest.fixture()
def nlr_series(data_dir):
    """Real node power in NLR's layout: the WattAMeter example node's 4 GPUs summed."""
    log = data_dir / "wattameter-example-logs/nvml_wattameter.log"
    rows = [ln.split() for ln in log.read_text().splitlines() if not ln.startswith("#")]
    t = pd.to_datetime([r[0] for r in rows], format="%Y-%m-%d_%H:%M:%S.%f")
    seconds = (t - t[0]).total_seconds().to_numpy()
    power_w = np.array([sum(int(x) for x in r[2:6]) for r in rows]) / 1000
    return pd.DataFrame({"power[W]": power_w}, index=pd.Index(seconds, name="timestep[s]"))


def test_nlr_parquet_returns_the_written_series(tmp_path, nlr_series):
    path = tmp_path / "run.parquet"
    nlr_series.to_parquet(path)
    trace = read_trace(path)
    assert trace.meta.format == "nlr-parquet" and trace.meta.hardware == "4xH100"
    assert trace.power_w.index.name == "elapsed" and list(trace.power_w.columns) == ["node"]
    np.testing.assert_array_equal(trace.power_w["node"], nlr_series["power[W]"])
    expected_wh = np.trapezoid(nlr_series["power[W]"], nlr_series.index) / 3600
    assert trace.energy_wh() == pytest.approx(expected_wh, rel=1e-9)


def test_nlr_parquet_takes_nodes_and_model_from_metadata(tmp_path, data_dir, nlr_series):
    """The real training metadata.csv says 000000.parquet is a 2-node llama2_70b_lora job."""
    (tmp_path / "results").mkdir()
    (tmp_path / "metadata.csv").write_bytes((data_dir / AGG / "training/metadata.csv").read_bytes())
    nlr_series.reset_index().to_parquet(tmp_path / "results/000000.parquet")  # time as a column
    trace = read_trace(tmp_path / "results/000000.parquet")
    assert (trace.meta.n_nodes, trace.meta.workload) == (2, "llama2_70b_lora")
    assert list(trace.power_w.columns) == ["job"]


def test_nlr_parquet_renamed_column_is_named(tmp_path, nlr_series):
    path = tmp_path / "run.parquet"
    nlr_series.rename(columns={"power[W]": "power[kW]"}).to_parquet(path)
    with pytest.raises(TraceFormatError, match=r"run.parquet: missing column\(s\) \['power\[W\]'\]"):
        read_trace(path, format="nlr-parquet")
