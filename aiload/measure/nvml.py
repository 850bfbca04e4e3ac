"""NVIDIA GPU power, energy and state through NVML (``nvidia-ml-py``, imported as ``pynvml``).

Power comes from the instantaneous field ``NVML_FI_DEV_POWER_INSTANT`` where the binding has
the constant and the driver answers it; otherwise from ``nvmlDeviceGetPowerUsage``, which on
Ampere and newer GPUs is a ~1 s moving average. The trace says which, per GPU, because an
averaged reading hides the fast swings a grid study cares about (WattAMeter PR #8,
NVIDIA/DCGM #157).
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable

from aiload.measure.protocol import SourceUnavailableError

__all__ = ["NvmlSource", "INSTANTANEOUS", "AVERAGED"]

INSTANTANEOUS = "instantaneous"
AVERAGED = "averaged"

_log = logging.getLogger(__name__)

# nvmlValue_t union member for each nvmlValueType_t (NVML_VALUE_TYPE_DOUBLE = 0, ...)
_VALUE_MEMBER = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlSource:
    """All GPUs NVML sees, read once per sample.

    Columns per GPU ``i`` (NVML index, in PCI bus order; NVML ignores
    ``CUDA_VISIBLE_DEVICES``): ``gpu{i}_power_w`` [W] and, where the GPU supports
    them, ``gpu{i}_energy_j`` (total-energy counter [J], from mJ), ``gpu{i}_temperature_c``
    [°C], ``gpu{i}_sm_clock_mhz`` [MHz], ``gpu{i}_util_pct`` and ``gpu{i}_mem_util_pct`` [%].

    Parameters
    ----------
    nvml : module, optional
        The NVML binding; ``pynvml`` (from nvidia-ml-py) by default. Tests pass a fake with
        the same function names.
    state : bool
        Also read temperature, SM clock and utilisation (default True). False keeps power and
        energy only: two NVML calls per GPU and sample instead of six.

    Raises
    ------
    SourceUnavailableError
        When NVML cannot start (no driver) or finds no GPU.
    """

    def __init__(self, nvml: Any = None, *, state: bool = True) -> None:
        self._state = state
        if nvml is None:
            try:
                import pynvml as nvml
            except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a dependency
                raise SourceUnavailableError(
                    f"cannot import pynvml ({exc}); install it with `pip install nvidia-ml-py`."
                ) from None
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise SourceUnavailableError(
                f"NVML could not start ({type(exc).__name__}: {exc}): this machine has no "
                "usable NVIDIA driver, so GPU power cannot be recorded."
            ) from None
        try:
            self._open()
        except nvml.NVMLError as exc:
            nvml.nvmlShutdown()
            raise SourceUnavailableError(
                f"NVML started but could not open the GPUs ({type(exc).__name__}: {exc}); check "
                "that this process may use them (device permissions, the job's GPU allocation)."
            ) from None
        except BaseException:
            nvml.nvmlShutdown()
            raise
        self.read_errors = 0

    def _open(self) -> None:
        nvml = self._nvml
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            raise SourceUnavailableError(
                "NVML started but found 0 GPUs; check that this job step was given the GPUs "
                "(Slurm: --gpus-per-node with ConstrainDevices), or record CPU power only with "
                "--cpu-only."
            )
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.gpu_models = [_text(nvml.nvmlDeviceGetName(h)) for h in self._handles]
        self.power_reading: dict[str, str] = {}
        readers: list[Callable[[], float]] = []
        columns: list[str] = []
        for i, handle in enumerate(self._handles):
            dev = f"gpu{i}"
            power, kind = self._power_reader(handle)
            self.power_reading[dev] = kind
            columns.append(f"{dev}_power_w")
            readers.append(power)
            for suffix, read in self._optional_readers(handle):
                try:
                    read()
                except nvml.NVMLError as exc:
                    # not every GPU has every counter (energy needs Volta+); leave the column out
                    _log.info("%s: %s not supported (%s)", dev, suffix, exc)
                    continue
                columns.append(f"{dev}_{suffix}")
                readers.append(read)
        self.columns = tuple(columns)
        self._readers = readers

    def _power_reader(self, handle: Any) -> tuple[Callable[[], float], str]:
        nvml = self._nvml
        field_id = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
        if field_id is not None:

            def instant() -> float:
                value = nvml.nvmlDeviceGetFieldValues(handle, [field_id])[0]
                if value.nvmlReturn != 0:  # NVML_SUCCESS
                    raise nvml.NVMLError(value.nvmlReturn)
                return getattr(value.value, _VALUE_MEMBER[value.valueType]) / 1000.0  # mW -> W

            try:
                instant()
            except nvml.NVMLError as exc:
                _log.info("instantaneous power field refused (%s); using averaged power", exc)
            else:
                return instant, INSTANTANEOUS
        return (lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0), AVERAGED

    def _optional_readers(self, handle: Any) -> list[tuple[str, Callable[[], float]]]:
        nvml = self._nvml
        temperature_gpu = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        clock_sm = getattr(nvml, "NVML_CLOCK_SM", 1)

        def utilisation(member: str) -> Callable[[], float]:
            return lambda: float(getattr(nvml.nvmlDeviceGetUtilizationRates(handle), member))

        energy = [("energy_j", lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0)]
        if not self._state:
            return energy
        return energy + [
            ("temperature_c", lambda: float(nvml.nvmlDeviceGetTemperature(handle, temperature_gpu))),
            ("sm_clock_mhz", lambda: float(nvml.nvmlDeviceGetClockInfo(handle, clock_sm))),
            ("util_pct", utilisation("gpu")),
            ("mem_util_pct", utilisation("memory")),
        ]

    def prime(self) -> None:
        """Nothing to do: NVML power needs no baseline."""

    def read(self) -> list[float]:
        """Read every column once [W, J, °C, MHz, %]; NaN (and a count) where NVML fails."""
        error = self._nvml.NVMLError
        out: list[float] = []
        for read in self._readers:
            try:
                out.append(read())
            except error as exc:
                if self.read_errors == 0:
                    _log.warning("NVML read failed (%s); the value is recorded as NaN", exc)
                self.read_errors += 1
                out.append(math.nan)
        return out

    def describe(self) -> dict[str, Any]:
        """GPU models, driver and NVML versions for the file metadata."""
        nvml = self._nvml

        def version(name: str) -> str | None:
            try:
                return _text(getattr(nvml, name)())
            except (nvml.NVMLError, AttributeError):
                return None

        return {
            "gpu_models": list(self.gpu_models),
            "driver_version": version("nvmlSystemGetDriverVersion"),
            "nvml_version": version("nvmlSystemGetNVMLVersion"),
        }

    def close(self) -> None:
        """Shut NVML down (each nvmlInit needs its nvmlShutdown)."""
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError as exc:  # pragma: no cover - driver-dependent
            _log.warning("nvmlShutdown failed: %s", exc)
