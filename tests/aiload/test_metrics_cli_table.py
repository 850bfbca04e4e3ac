"""`aiload metrics` prints figures a person reads: thousands separated, no exponent form."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd


def test_table_numbers_are_readable(tmp_path, capsys):
    from aiload.facility import FacilityLoad
    from aiload.metrics.cli import register

    idx = pd.date_range("2025-01-06", periods=96 * 7, freq="15min", tz="UTC")
    # 1,000 kW with a 200 kW step every other hour: energy by hand 1,100 kW x 168 h
    kw = 1000.0 + 200.0 * ((np.arange(len(idx)) // 8) % 2)
    frame = pd.DataFrame({"it_kw": kw / 1.2, "facility_kw": kw}, index=idx)
    path = tmp_path / "week.parquet"
    FacilityLoad(frame, pd.DataFrame(), {"freq_s": 900.0, "seed": 0}).to_parquet(path)
    parser = argparse.ArgumentParser(prog="aiload")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["metrics", str(path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    energy = next(line for line in out.splitlines() if line.startswith("energy_kwh"))
    assert energy.split()[-1] == f"{1100.0 * 168:,.1f}" == "184,800.0"
    assert "e+" not in out
