"""Fakes at the hardware boundary of aiload.measure: an NVML module and a powercap tree.

Everything above these (sources, schedule, recorder, writer, CLI) is the real code. The fake
NVML has the same function names and error classes as ``pynvml`` (nvidia-ml-py); its GPUs
draw a power that is a known function of time, and their energy counters integrate it
exactly, so tests can check the recorder's numbers against hand-computed ones.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace


class NVMLError(Exception):
    """Stands in for ``pynvml.NVMLError``."""


class NVMLError_LibraryNotFound(NVMLError):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class FakeNvml:
    """A module-like fake of ``pynvml``.

    Parameters
    ----------
    power_w : list of float
        Constant power of each GPU [W].
    instant : bool
        Whether the binding has NVML_FI_DEV_POWER_INSTANT (False: an older nvidia-ml-py).
    instant_refused : bool
        The constant exists but the driver refuses the field (older driver).
    driver : bool
        False: nvmlInit raises NVMLError_LibraryNotFound, as on a machine without a driver.
    energy : bool
        Whether the GPUs have the total-energy counter (Volta and newer).
    """

    NVMLError = NVMLError
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1

    def __init__(self, power_w=(300.0, 350.0), *, instant=True, instant_refused=False,
                 driver=True, energy=True, clock=time.monotonic):
        self.power_w = list(power_w)
        self.instant_refused = instant_refused
        self.driver = driver
        self.energy = energy
        self.clock = clock
        self.t0 = clock()
        self.initialised = 0
        self.calls = 0
        if instant:
            self.NVML_FI_DEV_POWER_INSTANT = 186

    # -- library ----------------------------------------------------------------------
    def nvmlInit(self):
        if not self.driver:
            raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")
        self.initialised += 1

    def nvmlShutdown(self):
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self):
        return "570.86.15"

    def nvmlSystemGetNVMLVersion(self):
        return "12.570.86.15"

    def nvmlDeviceGetCount(self):
        return len(self.power_w)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H100 80GB HBM3"

    # -- readings -----------------------------------------------------------------------
    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        self.calls += 1
        assert list(field_ids) == [186]
        ret = 3 if self.instant_refused else 0  # 3 = NVML_ERROR_NOT_SUPPORTED
        # 1 = NVML_VALUE_TYPE_UNSIGNED_INT, in mW
        value = SimpleNamespace(uiVal=int(round(self.power_w[handle] * 1000)))
        return [SimpleNamespace(fieldId=186, nvmlReturn=ret, valueType=1, value=value)]

    def nvmlDeviceGetPowerUsage(self, handle):
        self.calls += 1
        return int(round(self.power_w[handle] * 1000))  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.energy:
            raise NVMLError_NotSupported("Not Supported")
        return int(self.power_w[handle] * (self.clock() - self.t0) * 1000)  # mJ

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 41 + handle

    def nvmlDeviceGetClockInfo(self, handle, clock_type):
        return 1980

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(gpu=97, memory=40)


def make_powercap(root: Path, energy_uj=(1000, 2000), max_energy_range_uj=262143328850) -> Path:
    """A powercap tree with one package zone per value (plus a core sub-zone to ignore)."""
    for n, energy in enumerate(energy_uj):
        zone = root / f"intel-rapl:{n}"
        zone.mkdir(parents=True)
        (zone / "name").write_text(f"package-{n}\n")
        (zone / "energy_uj").write_text(f"{energy}\n")
        (zone / "max_energy_range_uj").write_text(f"{max_energy_range_uj}\n")
        sub = root / f"intel-rapl:{n}:0"
        sub.mkdir()
        (sub / "name").write_text("core\n")
        (sub / "energy_uj").write_text("5\n")
        (sub / "max_energy_range_uj").write_text(f"{max_energy_range_uj}\n")
    return root


def set_energy(root: Path, package: int, energy_uj: int) -> None:
    """Change a package counter in place (same inode, as sysfs would)."""
    with open(root / f"intel-rapl:{package}" / "energy_uj", "r+") as f:
        f.truncate(0)
        f.write(f"{energy_uj}\n")
