"""Loss-of-load capacity and fault screening on IEEE 14 (real ANDES runs)."""

from __future__ import annotations

import pytest

from grid.dynamics import loss_of_load_capacity, which_faults_trip


def test_loss_of_load_capacity_brackets_the_limit():
    """The capacity passes and one tolerance above it breaches; the droop estimate of the
    zenith limit is above it (the transient zenith overshoots the settling frequency)."""
    cap = loss_of_load_capacity("ieee14", 2, f_max_hz=60.3, t_end_s=4.0, tolerance_mw=2.0)
    runs = cap.runs
    passed = runs[runs.passed]
    failed = runs[~runs.passed]
    assert cap.facility_mw == pytest.approx(passed.facility_mw.max())
    assert failed.facility_mw.min() - cap.facility_mw <= 2.0
    assert (passed.zenith_hz <= 60.3).all() and (failed.zenith_hz > 60.3).all()
    # settling alone (Δf = ΔP / Σ S/R · f_n, 10,000 MW/pu) would allow 50 MW for 0.3 Hz
    assert 0 < cap.facility_mw < 50.0
    assert "zenith" in cap.binding
    assert len(runs) <= 6  # the interpolating search needs few runs


@pytest.mark.slow
def test_which_faults_trip_near_and_far():
    table = which_faults_trip("ieee14", 9, 20_000, fault_buses=[9, 14], cycles=3)
    assert table.loc[9, "tripped"]
    assert table.loc[9, "mw_lost"] == pytest.approx(20.0)
    assert table.loc[9, "voltage_min_pu"] < 0.01
    assert table.completed.all()


def test_which_faults_trip_says_where_andes_stopped():
    """A bolted fault at IEEE 39's bus 38 (a generator's terminal bus) pulls its machine out of
    step: ANDES stops on its stability criteria, and the row says so instead of a bare
    'not tripped'."""
    table = which_faults_trip("ieee39", 16, 80_000, fault_buses=[38], cycles=5)
    row = table.loc[38]
    assert not row["completed"]
    assert 0.5 + 5 / 60 < row["end_s"] < 2.0
    assert "stability criteria" in row["message"]
