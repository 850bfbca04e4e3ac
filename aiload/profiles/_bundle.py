"""Access to the files bundled in ``aiload/profiles/data`` (built by :mod:`aiload.profiles.build`)."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import pandas as pd

from aiload.errors import InputError

__all__ = ["bundle_path", "read_bundled_csv"]


def bundle_path(name: str) -> Path:
    """Path of a bundled data file; a clear error when the bundle was not built."""
    path = Path(str(resources.files("aiload.profiles") / "data" / name))
    if not path.is_file():
        raise InputError(
            f"bundled profile data {name!r} is missing from {path.parent}; rebuild it with "
            "'python -m aiload.profiles.build --data ../shared/data'."
        )
    return path


@functools.lru_cache(maxsize=None)
def _read_csv_cached(name: str) -> pd.DataFrame:
    return pd.read_csv(bundle_path(name), comment="#")


def read_bundled_csv(name: str) -> pd.DataFrame:
    """A bundled CSV as a new DataFrame (a copy: callers may modify it) [units in column names]."""
    return _read_csv_cached(name).copy()
