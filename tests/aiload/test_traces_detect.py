"""Format detection on the real files, and the errors of read_trace's entry point."""

from __future__ import annotations

import pytest

from aiload.errors import InputError, TraceFormatError
from aiload.traces import FORMATS, detect_format, read_trace

MLPERF = (
    "mlperf-training-v4.0-smc-power/smc-ac-power/results/8xSMC-H100-SXM-80GB/llama2_70b_lora/"
    "power/result_5742-240517053836692164828_10"
)
SPL = (
    "mlperf-inference-v4.1-h200-power/closed/NVIDIA/results/H200-SXM-141GBx8_TRT_MaxQ/"
    "mixtral-8x7b/Offline/performance/run_1/spl.txt"
)


@pytest.mark.parametrize(
    ("relpath", "fmt"),
    [
        ("wattameter-example-logs/nvml_wattameter.log", "wattameter"),
        ("wattameter-example-logs/rapl_wattameter.log", "wattameter"),
        (f"{MLPERF}/node_5.txt", "mlperf-mllog"),
        (SPL, "mlperf-spl"),
        ("nlr-genai-power-profiles/01_aggregated_datasets/training/metadata.csv", "nlr-metadata"),
        (
            "nlr-genai-power-profiles/01_aggregated_datasets/inference_offline_llama3_70b/metadata.csv",
            "nlr-metadata",
        ),
    ],
)
def test_real_files_are_detected(data_dir, relpath, fmt):
    assert detect_format(data_dir / relpath) == fmt
    assert fmt in FORMATS


def test_unknown_file_lists_the_formats(tmp_path):
    path = tmp_path / "power.csv"
    path.write_text("when,watts\n1,2\n")
    with pytest.raises(TraceFormatError, match=r"power.csv: cannot tell the format .*'when,watts'.*wattameter.*format="):
        read_trace(path)


def test_bad_arguments(data_dir, tmp_path):
    with pytest.raises(InputError, match=r"format='csv' is not one of \['wattameter'"):
        read_trace(data_dir / f"{MLPERF}/node_1.txt", format="csv")
    with pytest.raises(TraceFormatError, match=r"different formats \(node_1.txt: mlperf-mllog, spl.txt: mlperf-spl\)"):
        read_trace([data_dir / f"{MLPERF}/node_1.txt", data_dir / SPL])
    with pytest.raises(TraceFormatError, match="no trace files found"):
        read_trace(tmp_path)
    with pytest.raises(TraceFormatError, match="missing.txt: no such file"):
        read_trace(tmp_path / "missing.txt")
    with pytest.raises(InputError, match="expected a file, a run directory or a non-empty list"):
        read_trace([])
    with pytest.raises(InputError, match=r"\['window'\] are not understood by the 'mlperf-mllog' reader"):
        read_trace(data_dir / MLPERF, window="all")


def test_files_of_different_runs_do_not_combine(data_dir):
    other = (
        "mlperf-training-v4.0-smc-power/smc-ac-power/results/1xSMC-H100-SXM-80GB/llama2_70b_lora/"
        "power/result_5027-240510020224961918558_1/node_0.txt"
    )
    with pytest.raises(InputError, match=r"do not overlap by one grid step.*same run"):
        read_trace([data_dir / f"{MLPERF}/node_1.txt", data_dir / other])
