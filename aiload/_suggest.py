"""``" Did you mean 'x'?"``: the nearest known name, for error messages.

Its own module so that any module can use it without importing the one that defines the
names (``aiload.facility.spec`` and ``aiload.facility.arrivals`` both do).
"""

from __future__ import annotations

import difflib

__all__ = ["suggest"]


def suggest(name: str, options: list[str] | tuple[str, ...]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest option, or an empty string."""
    close = difflib.get_close_matches(str(name), list(options), n=1, cutoff=0.4)
    return f" Did you mean {close[0]!r}?" if close else ""
