"""Per-node idle power of a hardware, measured: :func:`idle_power_w`.

Its own module because the library (:mod:`aiload.profiles.library`) and the scaling fits
(:mod:`aiload.profiles.scaling`, :mod:`aiload.profiles._inference_fits`) both need it and the
library builds on the fits.
"""

from __future__ import annotations

import difflib
import functools
import json

from aiload.errors import InputError
from aiload.profiles._bundle import bundle_path

__all__ = ["idle_power_w"]


@functools.lru_cache(maxsize=1)
def _idle() -> dict:
    return json.loads(bundle_path("idle.json").read_text(encoding="utf-8"))


def idle_power_w(hardware: str) -> float:
    """Per-node idle power of a hardware [W], measured (see ``data/idle.json`` for the source).

    Parameters
    ----------
    hardware : str
        ``"4xH100"``, ``"8xH100-SXM"`` or ``"8xH200-SXM"``.

    Examples
    --------
    >>> 400 < idle_power_w("4xH100") < 650
    True
    """
    idle = _idle()
    if hardware not in idle:
        close = difflib.get_close_matches(str(hardware), list(idle), n=1, cutoff=0.3)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(f"no idle power for hardware {hardware!r}; known: {sorted(idle)}.{hint}")
    return float(idle[hardware]["power_w"])
