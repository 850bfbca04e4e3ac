"""NVML and RAPL sources driven through fakes at the hardware boundary."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from _measure_fakes import FakeNvml, make_powercap, set_energy

from aiload.measure import (
    AVERAGED,
    COUNTER_DIFFERENCE,
    INSTANTANEOUS,
    NvmlSource,
    RaplSource,
    SourceUnavailableError,
    counter_delta_uj,
    open_sources,
)


class FakeClock:
    """Monotonic clock in ns that the test moves by hand."""

    def __init__(self, ns: int = 10**12) -> None:
        self.ns = ns

    def __call__(self) -> int:
        return self.ns


# -- NVML ----------------------------------------------------------------------------------
def test_nvml_instantaneous_field_used_and_labelled():
    fake = FakeNvml(power_w=(312.5, 401.0))
    source = NvmlSource(fake)
    assert source.power_reading == {"gpu0": INSTANTANEOUS, "gpu1": INSTANTANEOUS}
    values = dict(zip(source.columns, source.read()))
    # the fake answers in mW (as NVML does); the source must give W
    assert values["gpu0_power_w"] == pytest.approx(312.5)
    assert values["gpu1_power_w"] == pytest.approx(401.0)
    assert values["gpu1_temperature_c"] == 42.0
    assert values["gpu0_sm_clock_mhz"] == 1980.0
    assert (values["gpu0_util_pct"], values["gpu0_mem_util_pct"]) == (97.0, 40.0)
    source.close()
    assert fake.initialised == 0  # every nvmlInit has its nvmlShutdown


@pytest.mark.parametrize(
    "kwargs",
    [{"instant": False}, {"instant": True, "instant_refused": True}],
    ids=["old-binding", "old-driver"],
)
def test_nvml_falls_back_to_averaged_power_and_says_so(kwargs):
    source = NvmlSource(FakeNvml(power_w=(250.0,), **kwargs))
    assert source.power_reading == {"gpu0": AVERAGED}
    assert source.read()[0] == pytest.approx(250.0)
    assert source.describe()["driver_version"] == "570.86.15"


def test_nvml_energy_counter_in_joules_and_optional():
    clock = {"t": 100.0}
    fake = FakeNvml(power_w=(200.0,), clock=lambda: clock["t"])
    source = NvmlSource(fake)
    e0 = dict(zip(source.columns, source.read()))["gpu0_energy_j"]
    clock["t"] += 2.5
    e1 = dict(zip(source.columns, source.read()))["gpu0_energy_j"]
    assert e1 - e0 == pytest.approx(200.0 * 2.5)  # 200 W for 2.5 s = 500 J (counter in mJ)
    no_energy = NvmlSource(FakeNvml(energy=False))
    assert "gpu0_energy_j" not in no_energy.columns and "gpu0_power_w" in no_energy.columns


def test_nvml_power_only_skips_state_channels():
    fake = FakeNvml(power_w=(300.0,))
    source = NvmlSource(fake, state=False)
    assert source.columns == ("gpu0_power_w", "gpu0_energy_j")


def test_nvml_without_driver_says_so():
    with pytest.raises(SourceUnavailableError, match=r"NVMLError_LibraryNotFound.*no usable NVIDIA driver"):
        NvmlSource(FakeNvml(driver=False))


def test_nvml_gpu_that_cannot_be_opened_is_explained():
    fake = FakeNvml()

    def no_permission(i):
        raise fake.NVMLError("Insufficient Permissions")

    fake.nvmlDeviceGetHandleByIndex = no_permission
    with pytest.raises(SourceUnavailableError, match=r"could not open the GPUs .*Insufficient Permissions"):
        NvmlSource(fake)
    assert fake.initialised == 0


def test_nvml_read_failure_is_nan_not_a_crash():
    fake = FakeNvml(power_w=(300.0,))
    source = NvmlSource(fake)

    def lost(handle, field_ids):
        raise fake.NVMLError("GPU is lost")

    fake.nvmlDeviceGetFieldValues = lost
    assert math.isnan(source.read()[0])
    assert source.read_errors == 1


# -- RAPL ----------------------------------------------------------------------------------
def test_counter_delta_wraps_at_max_energy_range():
    assert counter_delta_uj(100, 350, 1000) == 250
    # 900 -> wrap at 1000 -> 100: 100 to the top and 100 after it
    assert counter_delta_uj(900, 100, 1000) == 200


@given(
    start_uj=st.integers(0, 10**6 - 1),
    increments_uj=st.lists(st.integers(0, 10**6 - 1), min_size=1, max_size=50),
)
def test_unwrapped_sum_equals_true_energy(start_uj, increments_uj):
    # a counter of range 10^6 µJ read after each increment (each below one range, as at 0.1 s)
    range_uj = 10**6
    raw = [start_uj]
    for inc in increments_uj:
        raw.append((raw[-1] + inc) % range_uj)
    deltas = [counter_delta_uj(a, b, range_uj) for a, b in zip(raw, raw[1:])]
    assert deltas == increments_uj


def test_rapl_power_from_counter_differences_with_wraparound(tmp_path):
    root = make_powercap(tmp_path / "powercap", energy_uj=(262_000_000_000, 5_000_000))
    clock = FakeClock()
    source = RaplSource(root, clock_ns=clock)
    assert source.columns == ("cpu0_power_w", "cpu0_energy_j", "cpu1_power_w", "cpu1_energy_j")
    assert source.power_reading == {"cpu0": COUNTER_DIFFERENCE, "cpu1": COUNTER_DIFFERENCE}
    # 0.1 s later: package 0 wrapped (range 262143328850 µJ), package 1 used 12 J
    clock.ns += 100_000_000
    set_energy(root, 0, 6_671_150)  # 143_328_850 to the top + 6_671_150 after = 150 J
    set_energy(root, 1, 17_000_000)
    p0, e0, p1, e1 = source.read()
    assert p0 == pytest.approx(150.0 / 0.1)
    assert p1 == pytest.approx(12.0 / 0.1)
    # the energy column is the counter unwrapped: baseline + 150 J, not the raw value
    assert e0 == pytest.approx(262_000.0 + 150.0)
    assert e1 == pytest.approx(5.0 + 12.0)


def test_rapl_ignores_sub_zones_and_needs_package_zones(tmp_path):
    root = make_powercap(tmp_path / "pc", energy_uj=(1,))
    assert RaplSource(root).devices == ("cpu0",)  # intel-rapl:0:0 (core) is not a package
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceUnavailableError, match=r"no RAPL package counters under .*empty"):
        RaplSource(empty)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file, so permissions cannot be tested")
def test_rapl_unreadable_counter_explains_permissions(tmp_path):
    root = make_powercap(tmp_path / "pc", energy_uj=(1,))
    (root / "intel-rapl:0" / "energy_uj").chmod(0)
    with pytest.raises(SourceUnavailableError, match=r"root only.*chmod a\+r"):
        RaplSource(root)


# -- choosing sources ------------------------------------------------------------------------
def test_no_driver_but_rapl_suggests_cpu_only(tmp_path):
    root = make_powercap(tmp_path / "pc")
    with pytest.raises(SourceUnavailableError, match=r"no usable NVIDIA driver.*--cpu-only"):
        open_sources(gpu=True, cpu=None, nvml=FakeNvml(driver=False), powercap_root=root)
    sources = open_sources(gpu=False, cpu=True, nvml=FakeNvml(driver=False), powercap_root=root)
    assert [type(s).__name__ for s in sources] == ["RaplSource"]


def test_neither_source_is_one_clear_error(tmp_path):
    expected = r"nothing to record on this machine\. GPU: .* CPU: no RAPL"
    with pytest.raises(SourceUnavailableError, match=expected):
        open_sources(gpu=True, cpu=None, nvml=FakeNvml(driver=False), powercap_root=tmp_path)


def test_gpu_only_when_rapl_is_missing_and_optional(tmp_path):
    fake = FakeNvml()
    sources = open_sources(gpu=True, cpu=None, nvml=fake, powercap_root=tmp_path)
    assert [type(s).__name__ for s in sources] == ["NvmlSource"]
    with pytest.raises(SourceUnavailableError, match="no RAPL package counters"):
        open_sources(gpu=True, cpu=True, nvml=fake, powercap_root=tmp_path)
    assert fake.initialised == 1  # the failed call shut its NVML down again
