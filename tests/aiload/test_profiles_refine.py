"""Finer steps from measurements: energy kept exactly, structure checked against the 0.1 s log."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aiload.profiles as profiles
from aiload.errors import InputError
from aiload.profiles import refine as R
from aiload.profiles import synth
from aiload.profiles._profile import Profile
from aiload.profiles._subsample import measure_substep
from aiload.traces import read_trace

WATT = "wattameter-example-logs"


def _profile(values, step_s, measured=True) -> Profile:
    index = pd.timedelta_range(start=pd.Timedelta(0), periods=len(values),
                               freq=pd.Timedelta(seconds=step_s), name="elapsed")
    return Profile(name="t", workload="training", model="m", hardware="4xH100", gpus_per_node=4,
                   nodes=1, step_s=step_s, power_w=pd.DataFrame({"r0": values}, index=index),
                   measured=measured, source="test", license="-", citation="-", boundary="-")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 5000.0), min_size=1, max_size=40), st.integers(1, 25))
def test_mean_preserving_keeps_every_interval_energy(values, factor):
    v = np.array(values)
    fine = R.mean_preserving(v, factor)
    assert fine.shape == (len(v) * factor,)
    assert (fine >= 0).all()
    np.testing.assert_allclose(fine.reshape(-1, factor).mean(axis=1), v, rtol=1e-12, atol=1e-9)


def test_mean_preserving_turns_a_step_into_a_ramp():
    fine = R.mean_preserving(np.array([500.0, 500.0, 2900.0, 2900.0]), 20)
    jumps = np.abs(np.diff(fine))
    # a staircase jumps 2,400 W at once; the refinement spreads it over the two middle
    # intervals (each keeps its mean, so the power dips before the step and overshoots after
    # it, by a bounded amount) and stays flat far from the step
    assert jumps.max() < 2400 / 5
    assert 0.7 * 500 < fine.min() and fine.max() < 1.25 * 2900
    assert np.allclose(fine[:15], 500.0) and np.allclose(fine[-15:], 2900.0)


def test_refine_keeps_energy_and_says_what_is_measured():
    p = profiles.get("mlperf-llama2-70b-lora-8xh100-8n")
    fine = R.refine(p, 0.1, seed=3)
    coarse = p.power_w["r0"].to_numpy()
    np.testing.assert_allclose(fine.power_w["r0"].to_numpy().reshape(-1, 20).mean(axis=1), coarse,
                               rtol=1e-12)
    assert fine.extra["measured_step_s"] == 2.0 and fine.extra["synthesised_below_s"] == 2.0
    assert not fine.measured and "Refined from 2 s to 0.1 s" in fine.notes
    assert (fine.power_w.to_numpy() >= 0).all()
    # same seed, same bits; another seed, another fluctuation
    again = R.refine(p, 0.1, seed=3)
    assert np.array_equal(again.power_w.to_numpy(), fine.power_w.to_numpy())
    assert not np.array_equal(R.refine(p, 0.1, seed=4).power_w.to_numpy(), fine.power_w.to_numpy())
    with pytest.raises(InputError, match=r"step 2 s is not a whole multiple of step_s = 0.3 s"):
        R.refine(p, 0.3)


def _wattameter(data_dir) -> np.ndarray:
    folder = data_dir / WATT
    return read_trace([folder / "nvml_wattameter.log", folder / "rapl_wattameter.log"]).total_w().to_numpy()


def _ramp_stats(series: np.ndarray) -> tuple[float, float]:
    d = np.abs(np.diff(series))
    return float(d.max()), float(np.sqrt((d ** 2).mean()))


@pytest.mark.parametrize("factor, max_tol, rms_tol", [
    (20, 0.15, 0.10),  # 2 s means: the step the amplitude was calibrated on
    (10, 0.50, 0.15),  # 1 s means: not used in the calibration
])
def test_refined_means_have_the_measured_sub_second_ramps(data_dir, factor, max_tol, rms_tol):
    x = _wattameter(data_dir)
    x = x[: len(x) // factor * factor]
    coarse = x.reshape(-1, factor).mean(axis=1)
    measured_max, measured_rms = _ramp_stats(x)
    stats = np.array([_ramp_stats(R.refine(_profile(coarse, factor * 0.1), 0.1, seed=s)
                                  .power_w["r0"].to_numpy()) for s in range(16)])
    # the refined series keeps every coarse mean and has the measured increments:
    # largest 0.1 s ramp and rms of 0.1 s increments (the high-pass part of the spectrum)
    assert stats[:, 0].mean() == pytest.approx(measured_max, rel=max_tol)
    assert stats[:, 1].mean() == pytest.approx(measured_rms, rel=rms_tol)
    # the staircase of the same means jumps > 5x the measured largest ramp
    assert _ramp_stats(np.repeat(coarse, factor))[0] > 5 * measured_max


def test_bundled_spectrum_is_the_one_measured(data_dir):
    got = measure_substep(data_dir)
    spec = R.substep_spectrum()
    assert spec["alpha"] == pytest.approx(got["alpha"], rel=1e-9)
    np.testing.assert_allclose(spec["psd"], got["psd"], rtol=1e-9)
    # most of the residual's power is just below the coarse step's frequency, little near 5 Hz
    assert spec["psd"][0] > 10 * spec["psd"][-1]


def test_job_profiles_are_refined_to_a_tenth_of_a_second():
    fit = profiles.scaling.training("gpt3-175b", "8xH100-SXM")
    p = profiles.job_profile("gpt3-175b", "8xH100-SXM", 64)
    stair = profiles.job_profile("gpt3-175b", "8xH100-SXM", 64, step_s=None)
    assert p.extra["measured_step_s"] == 2.0 and p.extra["refined_to_step_s"] == 0.1
    assert p.step_s == pytest.approx(0.1 * p.extra["stretch"], rel=1e-9)
    assert p.energy_wh * 64 / 1e3 == pytest.approx(fit.energy_kwh(64), rel=1e-9)
    assert p.energy_wh == pytest.approx(stair.energy_wh, rel=1e-9)
    fine, steps = np.diff(p.power_w["r0"].to_numpy()), np.diff(np.repeat(stair.power_w["r0"].to_numpy(), 20))
    # the staircase holds 19 of 20 fine intervals unchanged and jumps at the 20th
    assert np.mean(steps == 0) > 0.9 and np.mean(fine == 0) < 0.01
    assert np.abs(fine).max() < 0.5 * np.abs(steps).max()


def test_synthesised_training_noise_is_not_white():
    kw = dict(duration_s=600.0, mean_w=2400.0, idle_w=434.0, step_s=0.2, replicates=1, seed=5)
    smooth = synth.synth_training(synth.LORA_SHAPE, **kw)["r0"].to_numpy()
    white = synth.synth_training(synth.TrainingShape(dip_depth=0.16, noise=0.045, noise_step_s=0.2),
                                 **kw)["r0"].to_numpy()
    assert smooth.mean() == pytest.approx(2400.0) and white.mean() == pytest.approx(2400.0)
    # same spread over the run, far smaller 0.2 s increments away from the dip edges
    def inc(x):
        return np.median(np.abs(np.diff(x)))

    assert inc(smooth) < 0.4 * inc(white)
    assert smooth.std() == pytest.approx(white.std(), rel=0.25)


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    # before: a raw TypeError / ValueError from numpy's SeedSequence, an AttributeError
    ((0.1,), {"seed": "a"}, r"refine\(seed=\): expected a whole number >= 0, got 'a'"),
    ((0.1,), {"seed": -1}, r"refine\(seed=\): expected a whole number >= 0, got -1"),
    ((True,), {}, r"refine: step_s must be a positive number of seconds, got True"),
])
def test_refine_names_a_bad_seed_or_step(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        R.refine(profiles.get("nlr-llama2-70b-lora-4xh100-4n"), *args, **kwargs)


def test_refine_names_a_frame_given_for_a_profile():
    frame = profiles.get("nlr-llama2-70b-lora-4xh100-4n").power_w
    with pytest.raises(InputError, match=r"refine: expected an aiload.profiles.Profile, got "
                                         r"DataFrame"):
        R.refine(frame, 0.1)
