"""CPU package power from Linux RAPL energy counters (``/sys/class/powercap/intel-rapl:N``).

RAPL exposes a cumulative energy counter ``energy_uj`` [µJ] per CPU package that wraps to 0
after ``max_energy_range_uj``. Power is the counter difference over the time between two
reads, so each sample is the mean package power over the interval that ENDS at that read.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Callable

from aiload.measure.protocol import SourceUnavailableError

__all__ = ["RaplSource", "COUNTER_DIFFERENCE", "counter_delta_uj"]

COUNTER_DIFFERENCE = "counter-difference"

# top-level zones only: intel-rapl:0, intel-rapl:1 (intel-rapl:0:0 is a sub-domain)
_PACKAGE_ZONE = re.compile(r"^intel-rapl:(\d+)$")


def counter_delta_uj(previous_uj: int, current_uj: int, max_energy_range_uj: int) -> int:
    """Energy between two reads of a wrapping RAPL counter [µJ].

    Parameters
    ----------
    previous_uj, current_uj : int
        Two successive counter values [µJ].
    max_energy_range_uj : int
        The counter's range; it wraps to 0 after this value [µJ].

    Returns
    -------
    int
        ``current - previous``, plus the range when the counter wrapped in between [µJ]. At
        0.1 s sampling a second wrap is impossible (the range is minutes of full power).

    Examples
    --------
    >>> counter_delta_uj(900, 100, 1000)
    200
    """
    delta = current_uj - previous_uj
    if delta < 0:
        delta += max_energy_range_uj
    return delta


class RaplSource:
    """Every CPU package RAPL exposes, read once per sample.

    Columns per package ``N`` (the number in ``package-N``): ``cpuN_power_w`` [W] and
    ``cpuN_energy_j`` (the counter unwrapped, [J]).

    Parameters
    ----------
    root : path
        The powercap directory [``/sys/class/powercap``]; tests pass a fake tree.
    clock_ns : callable, optional
        Monotonic clock [ns] used for the time between reads.

    Raises
    ------
    SourceUnavailableError
        When there is no package zone or its counter cannot be read (permissions).
    """

    def __init__(self, root: os.PathLike | str, clock_ns: Callable[[], int] = time.monotonic_ns):
        self.root = Path(root)
        self._clock_ns = clock_ns
        zones = []
        for zone in self.root.glob("intel-rapl:*"):
            match = _PACKAGE_ZONE.match(zone.name)
            if match and (zone / "energy_uj").exists():
                zones.append((int(match.group(1)), zone))
        if not zones:
            raise SourceUnavailableError(
                f"no RAPL package counters under {self.root} (expected intel-rapl:N/energy_uj): "
                "this CPU or kernel does not expose RAPL, so CPU power cannot be recorded."
            )
        self._fds: list[int] = []
        self._max_uj: list[int] = []
        devices = []
        try:
            for number, zone in sorted(zones):
                name = (zone / "name").read_text().strip() if (zone / "name").exists() else ""
                # package-N names the socket; fall back to the zone number
                found = re.fullmatch(r"package-(\d+)", name)
                devices.append(f"cpu{found.group(1) if found else number}")
                self._max_uj.append(int((zone / "max_energy_range_uj").read_text()))
                self._fds.append(os.open(zone / "energy_uj", os.O_RDONLY))
                self._read_counter(len(self._fds) - 1)
        except PermissionError as exc:
            self.close()
            raise SourceUnavailableError(
                f"RAPL counters exist but cannot be read ({exc}). Since Linux 5.10 energy_uj "
                "is readable by root only; run as root, or have an administrator run "
                "`chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj`."
            ) from None
        except (OSError, ValueError) as exc:
            self.close()
            raise SourceUnavailableError(f"cannot read RAPL counters under {self.root}: {exc}") from None
        self.devices = tuple(devices)
        self.columns = tuple(c for d in devices for c in (f"{d}_power_w", f"{d}_energy_j"))
        self.power_reading = {d: COUNTER_DIFFERENCE for d in devices}
        self._last_uj: list[int] = []
        self._total_uj: list[int] = []
        self._last_ns = 0
        self.prime()

    def _read_counter(self, i: int) -> int:
        return int(os.pread(self._fds[i], 32, 0))

    def prime(self) -> None:
        """Read the counters as the baseline for the next power value."""
        self._last_ns = self._clock_ns()
        self._last_uj = [self._read_counter(i) for i in range(len(self._fds))]
        self._total_uj = list(self._last_uj)

    def read(self) -> list[float]:
        """Mean power since the previous read [W] and the unwrapped energy [J], per package."""
        now_ns = self._clock_ns()
        elapsed_s = (now_ns - self._last_ns) / 1e9
        out: list[float] = []
        for i in range(len(self._fds)):
            current = self._read_counter(i)
            delta = counter_delta_uj(self._last_uj[i], current, self._max_uj[i])
            self._last_uj[i] = current
            self._total_uj[i] += delta
            out.append(delta / 1e6 / elapsed_s if elapsed_s > 0 else float("nan"))
            out.append(self._total_uj[i] / 1e6)
        self._last_ns = now_ns
        return out

    def describe(self) -> dict[str, Any]:
        """The CPU model (from ``/proc/cpuinfo`` where it exists)."""
        model = None
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return {"cpu_model": model, "cpu_packages": len(self._fds)}

    def close(self) -> None:
        """Close the counter files."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []
