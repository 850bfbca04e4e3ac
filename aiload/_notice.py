"""A one-line notice on stderr when an optional fast engine is missing and a stage will be slow.

lightsim2grid and numba are default dependencies; an install without one still works (the
results are the same), only slower, and says so once per process at the stage it slows down.
"""

from __future__ import annotations

import sys

__all__ = ["slow_without"]

#: the packages already named in this process
_said: set[str] = set()


def slow_without(package: str, consequence: str) -> None:
    """Say once per process, on stderr, that ``package`` is missing and what runs slower.

    Parameters
    ----------
    package : str
        The importable name that is missing (``"lightsim2grid"``, ``"numba"``).
    consequence : str
        What runs instead and how much slower, e.g. ``"grid studies solve with pandapower.runpp"``.
    """
    if package in _said:
        return
    _said.add(package)
    print(f"aiload: {package} is not installed, so {consequence}; install it "
          f"(pip install {package}; it is a default dependency of aiload).", file=sys.stderr)
