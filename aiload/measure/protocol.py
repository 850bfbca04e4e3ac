"""What every power source of the recorder provides: the :class:`Source` protocol and the
error a source raises when it cannot be used on this machine.

A *source* reads one kind of hardware (GPUs through NVML, CPU packages through RAPL) and
returns one float per column on every :meth:`Source.read`. Sources are the only place that
touches hardware; everything above them (schedule, buffering, file format) is shared. How the
recorder opens them is :func:`aiload.measure.sources.open_sources`.
"""

from __future__ import annotations

from typing import Any, Protocol

from aiload.errors import AiloadError

__all__ = ["Source", "SourceUnavailableError"]


class SourceUnavailableError(AiloadError, RuntimeError):
    """A power source (NVML, RAPL) cannot be used on this machine.

    The message says what failed, why, and what to do instead (e.g. ``--cpu-only``).
    """


class Source(Protocol):
    """One kind of power source, opened and ready to read."""

    #: output columns, e.g. ``("gpu0_power_w", "gpu0_energy_j", ...)``
    columns: tuple[str, ...]
    #: per device: ``"instantaneous"``, ``"averaged"`` or ``"counter-difference"``
    power_reading: dict[str, str]

    def prime(self) -> None:
        """Take a baseline reading just before the first sample (counters need one)."""

    def read(self) -> list[float]:
        """One value per column, in the order of :attr:`columns` (NaN where a read failed)."""

    def describe(self) -> dict[str, Any]:
        """Static facts for the file metadata (models, driver and library versions)."""

    def close(self) -> None:
        """Release the hardware interface."""
