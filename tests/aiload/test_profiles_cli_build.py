"""``aiload profiles`` and the bundle build script."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from aiload.profiles import build, catalog
from aiload.profiles._bundle import bundle_path
from scenarios.cli import main


def test_profiles_lists_catalog(capsys):
    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    for name in catalog()["name"]:
        assert name in out
    assert "synthesised" in out and "measured" in out


def test_profiles_json_and_filters(capsys):
    assert main(["profiles", "--json", "--hardware", "8xH200-SXM"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["hardware"] for r in rows} == {"8xH200-SXM"}
    assert len(rows) == 5  # 4 MLPerf runs + idle


def test_profiles_show(capsys):
    assert main(["profiles", "show", "mlperf-llama2-70b-server-8xh200", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["mean_power_w"] == pytest.approx(6280, rel=0.002)  # SOURCE.md table
    assert info["license"] == "Apache-2.0" and info["measured"] is True


def test_profiles_show_unknown_is_a_clear_error(capsys):
    assert main(["profiles", "show", "gpt3"]) == 2
    err = capsys.readouterr().err
    assert "no bundled profile named 'gpt3'" in err and "mlperf-gpt3-175b-8xh100-64n" in err


def test_build_reproduces_the_bundle(data_dir, tmp_path):
    out = build.build(data_dir, tmp_path)
    for name in ("nlr_online_rate.csv", "nlr_online_finite.csv", "nlr_offline.csv",
                 "mlperf_training_points.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name, comment="#"),
                                      pd.read_csv(bundle_path(name), comment="#"))
    fresh = pd.read_parquet(out / "measured_profiles.parquet")
    bundled = pd.read_parquet(bundle_path("measured_profiles.parquet"))
    pd.testing.assert_frame_equal(fresh, bundled)
    assert sum(p.stat().st_size for p in out.iterdir()) < 3e6  # "a few MB at most"
    assert not list(out.glob("*.tmp"))


def test_build_rejects_a_wrong_folder(tmp_path):
    with pytest.raises(ValueError, match="does not look like the shared data folder"):
        build.build(tmp_path, tmp_path / "out")
