"""How the recorder opens its power sources: :func:`open_sources`.

What every source provides (:class:`Source`, :class:`SourceUnavailableError`) is in
:mod:`aiload.measure.protocol`, re-exported here; the sources are
:class:`~aiload.measure.nvml.NvmlSource` and :class:`~aiload.measure.rapl.RaplSource`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aiload.measure.nvml import NvmlSource
from aiload.measure.protocol import Source, SourceUnavailableError
from aiload.measure.rapl import RaplSource

__all__ = ["Source", "SourceUnavailableError", "open_sources", "DEFAULT_POWERCAP_ROOT"]

#: where Linux exposes RAPL energy counters
DEFAULT_POWERCAP_ROOT = Path("/sys/class/powercap")


def open_sources(
    *,
    gpu: bool,
    cpu: bool | None,
    gpu_state: bool = True,
    nvml: Any = None,
    powercap_root: os.PathLike | str | None = None,
) -> list[Source]:
    """Open the sources asked for; fail with one clear message when they cannot be used.

    Parameters
    ----------
    gpu : bool
        Record NVIDIA GPUs through NVML; an error when NVML cannot start.
    cpu : bool or None
        Record CPU packages through RAPL: ``True`` requires it, ``None`` uses it when present,
        ``False`` skips it.
    gpu_state : bool
        Also read GPU temperature, SM clock and utilisation (power and energy always).
    nvml : module, optional
        The NVML binding (``pynvml`` from nvidia-ml-py by default); tests pass a fake.
    powercap_root : path, optional
        The powercap directory [default ``/sys/class/powercap``]; tests pass a fake tree.

    Returns
    -------
    list of Source
        GPU source first, then CPU, each already opened.

    Raises
    ------
    SourceUnavailableError
        When a required source cannot be opened, or nothing at all can be recorded.
    """
    root = Path(DEFAULT_POWERCAP_ROOT if powercap_root is None else powercap_root)
    sources: list[Source] = []
    gpu_error: SourceUnavailableError | None = None
    cpu_error: SourceUnavailableError | None = None
    if gpu:
        try:
            sources.append(NvmlSource(nvml, state=gpu_state))
        except SourceUnavailableError as exc:
            gpu_error = exc
    if cpu is None or cpu:
        try:
            sources.append(RaplSource(root))
        except SourceUnavailableError as exc:
            cpu_error = exc

    if gpu_error is not None or (cpu and cpu_error is not None) or not sources:
        for source in sources:
            source.close()
        raise SourceUnavailableError(_explain(gpu, cpu, gpu_error, cpu_error))
    return sources


def _explain(
    gpu: bool,
    cpu: bool | None,
    gpu_error: SourceUnavailableError | None,
    cpu_error: SourceUnavailableError | None,
) -> str:
    if gpu_error is not None and cpu_error is None and cpu is not False:
        # RAPL opened fine, so the user can still record CPU power
        return (
            f"{gpu_error} CPU power is available through RAPL: record it alone with "
            "`aiload record --cpu-only` (Recorder(..., gpu=False, cpu=True))."
        )
    if gpu_error is not None and cpu is False:
        return f"{gpu_error} Record CPU power instead with `aiload record --cpu-only`."
    if gpu_error is None and cpu_error is not None:
        return str(cpu_error)
    if gpu_error is None and cpu_error is None:
        return "nothing to record: no source was asked for (gpu=False and cpu=False)."
    reasons = [f"{name}: {e}" for name, e in (("GPU", gpu_error), ("CPU", cpu_error)) if e is not None]
    return (
        "nothing to record on this machine. " + " ".join(reasons)
        + " Run on a node with an NVIDIA driver (GPUs) or readable RAPL counters (CPUs)."
    )
