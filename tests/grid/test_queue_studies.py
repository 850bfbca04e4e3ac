"""N-1 and simultaneous load loss of an interconnection queue (issue 30), against
pandapower's own runpp with every facility attached."""

from __future__ import annotations

import math

import numpy as np
import pandapower as pp
import pandas as pd
import pytest

import grid
from aiload.errors import InputError
from tests.grid.conftest import runpp_with_loads

PF = 0.97
TAN = math.tan(math.acos(PF))


def runpp_with(net, loads_mw: dict[int, float], *, out: tuple[str, int] | None = None,
               enforce_q_lims: bool = False):
    """A copy with every facility as a load (and one element out of service), runpp."""
    return runpp_with_loads(net, loads_mw, tan_phi=TAN, out=out, enforce_q_lims=enforce_q_lims)


def _queue(peaks: dict[int, float], zones: tuple[str, ...]) -> dict[int, pd.Series]:
    """Facilities with different daily shapes, each on its own site clock (same instants)."""
    idx = pd.date_range("2024-07-01", periods=12, freq="h", tz="UTC")
    out = {}
    for k, ((bus, peak), tz) in enumerate(zip(peaks.items(), zones, strict=True)):
        shape = 0.7 + 0.3 * np.sin(np.arange(12) / 12 * 2 * np.pi + k) ** 2
        out[bus] = pd.Series(peak * shape, index=idx.tz_convert(tz), name="facility_mw")
    return out


def test_n1_of_a_queue_equals_runpp_with_every_facility_attached():
    net = grid.networks.load("case118")
    queue = _queue({49: 60.0, 59: 90.0, 80: 70.0}, ("America/Chicago", "UTC", "Asia/Tokyo"))
    table = grid.contingency(net, queue, outages="trafos", power_factor=PF, n_peak=3,
                             margins=False, enforce_q_lims=True)
    total = sum(s.tz_convert("UTC") for s in queue.values())
    times = total.nlargest(3).index  # the steps where the queue draws most
    assert table.attrs["buses"] == (49, 59, 80)
    worst = table.iloc[1:].sort_values("min_vm_pu").iloc[0]
    cases = [("none", None), (worst.element, ("trafo", int(worst.element.split()[1])))]
    for label, out in cases:
        row = table.set_index("element").loc[label]
        refs = [runpp_with(net, {b: float(s.tz_convert("UTC").loc[t]) for b, s in queue.items()},
                           out=out, enforce_q_lims=True) for t in times]
        assert row.min_vm_pu == pytest.approx(min(r.res_bus.vm_pu.min() for r in refs), abs=1e-6)
        assert row.max_vm_pu == pytest.approx(max(r.res_bus.vm_pu.max() for r in refs), abs=1e-6)
        assert row.max_line_loading_percent == pytest.approx(
            max(r.res_line.loading_percent.max() for r in refs), abs=1e-4)
        assert row.islanded_facility_buses == [] and not row.facility_islanded


def test_n1_names_the_facility_an_outage_islands_and_only_its_power():
    net = grid.networks.load("cigre_mv")
    queue = _queue({5: 3.0, 14: 2.0}, ("UTC", "Europe/Berlin"))
    table = grid.contingency(net, queue, outages="lines", power_factor=PF, n_peak=4)
    times = sum(s.tz_convert("UTC") for s in queue.values()).nlargest(4).index
    row = table.set_index("element").loc["line 0"]  # feeds bus 5's feeder, not bus 14's
    assert row.islanded_facility_buses == [5] and row.facility_islanded
    assert row.facility_unserved_mw == queue[5].tz_convert("UTC").loc[times].max()
    intact = table.iloc[0]
    assert intact.islanded_facility_buses == [] and intact.facility_unserved_mw == 0.0
    # the P-V nose of the queue: every facility at its share of the peak, raised together
    peak_t = times[np.argmax([sum(s.tz_convert("UTC").loc[t] for s in queue.values())
                              for t in times])]
    at_peak = {b: float(s.tz_convert("UTC").loc[peak_t]) for b, s in queue.items()}
    share = {b: p / sum(at_peak.values()) for b, p in at_peak.items()}
    runpp_with(net, {b: intact.nose_mw * f for b, f in share.items()})  # solves
    with pytest.raises(pp.LoadflowNotConverged):  # 1 % beyond: collapse
        runpp_with(net, {b: 1.01 * intact.nose_mw * f for b, f in share.items()})
    # the queue's nose lies beyond either facility's own
    assert intact.nose_mw > 1.5 * grid.contingency(net, queue[5], bus=5, outages="lines",
                                                   power_factor=PF, n_peak=4).nose_mw.iloc[0]


def test_simultaneous_trip_of_a_chosen_set_equals_runpp():
    net = grid.networks.load("case118")
    queue = {49: 60.0, 59: 80.0, 80: 50.0}
    ev = grid.load_loss(net, p_mw=queue, trip=[49, 59], power_factor=PF, enforce_q_lims=True)
    assert ev.p_mw == 140.0 and ev.tripped_buses == (49, 59) and ev.buses == (49, 59, 80)
    pre = runpp_with(net, queue, enforce_q_lims=True)
    post = runpp_with(net, {80: 50.0}, enforce_q_lims=True)
    np.testing.assert_allclose(ev.vm_pre_pu, pre.res_bus.vm_pu, atol=1e-6, rtol=0)
    np.testing.assert_allclose(ev.vm_post_pu, post.res_bus.vm_pu, atol=1e-6, rtol=0)
    assert ev.largest_rise_bus == int((post.res_bus.vm_pu - pre.res_bus.vm_pu).idxmax())
    # dV/dP per MW of the tripped set, the step shared 60:80, by two more runpp
    dp = 1.4  # the default: 1 % of the 140 MW lost
    up = runpp_with(net, {49: 60 + dp * 60 / 140, 59: 80 + dp * 80 / 140, 80: 50.0},
                    enforce_q_lims=True)
    down = runpp_with(net, {49: 60 - dp * 60 / 140, 59: 80 - dp * 80 / 140, 80: 50.0},
                      enforce_q_lims=True)
    np.testing.assert_allclose(ev.sensitivity_pu_per_mw,
                               (up.res_bus.vm_pu - down.res_bus.vm_pu) / (2 * dp), atol=1e-7)


def test_trip_of_a_queue_of_one_is_the_one_facility_event():
    net = grid.networks.load("cigre_mv")
    one = grid.load_loss(net, bus=5, p_mw=4.0)
    queue = grid.load_loss(net, p_mw={5: 4.0})
    for name in ("vm_pre_pu", "vm_post_pu", "sensitivity_pu_per_mw"):
        np.testing.assert_array_equal(getattr(one, name), getattr(queue, name), err_msg=name)


def test_trip_input_errors():
    net = grid.networks.load("cigre_mv")
    with pytest.raises(InputError, match=r"trip: expected some of the queue's buses \[5, 14\], "
                                         r"got \[7\] \(\[7\] not in the queue\)"):
        grid.load_loss(net, p_mw={5: 1.0, 14: 1.0}, trip=[7])
    with pytest.raises(InputError, match=r"trip=\[5\] needs a queue"):
        grid.load_loss(net, bus=5, p_mw=1.0, trip=[5])
    with pytest.raises(InputError, match=r"and also bus=5"):
        grid.load_loss(net, bus=5, p_mw={5: 1.0})
    with pytest.raises(InputError, match=r"p_mw\[14\]: expected a finite facility power >= 0"):
        grid.load_loss(net, p_mw={5: 1.0, 14: -2.0})
