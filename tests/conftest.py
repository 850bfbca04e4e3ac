"""Shared test fixtures: where the real data lives.

Tests read real, openly licensed measurements from ``data_dir``: by default the small subsets
kept in the repository under ``tests/data/`` (see its README.md: what each subset is, how it
was cut, the 15 MB budget), laid out exactly like the full shared data set. Set
``AILOAD_SHARED_DATA`` to a folder of the full set to run the same tests on it. Tests write
only to pytest's temporary directories.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
SUBSETS = ROOT / "tests" / "data"
#: the one packed archive a source folder of tests/data may hold (see tests/data/README.md)
PACKED = "subset.tar.xz"
#: where the full shared data set is looked for when AILOAD_SHARED_DATA is not set
FULL_DEFAULT = ROOT.parent / "shared" / "data"
HOW_TO_GET = ("get the sources from the public locations listed in tests/data/README.md (each "
              "folder's SOURCE.md names its origin) and set AILOAD_SHARED_DATA to that folder")


def unpack_subsets(src: Path, dest: Path) -> Path:
    """Copy ``tests/data`` to ``dest`` and unpack each source's ``subset.tar.xz`` in place.

    Returns ``dest``, laid out like the full shared data set (source folder / original paths).
    """
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.py", "__pycache__", PACKED))
    for archive in sorted(src.glob(f"*/{PACKED}")):
        with tarfile.open(archive, "r:xz") as tar:
            tar.extractall(dest / archive.parent.name, filter="data")
    return dest


@pytest.fixture(scope="session")
def subset_dir(tmp_path_factory) -> Path:
    """The repository's test-data subsets, unpacked into a session temporary folder."""
    return unpack_subsets(SUBSETS, tmp_path_factory.mktemp("aiload-data") / "data")


@pytest.fixture(scope="session")
def data_dir(request) -> Path:
    """The real measurements: ``$AILOAD_SHARED_DATA`` when set, else the repository subsets."""
    env = os.environ.get("AILOAD_SHARED_DATA")
    if not env:
        return request.getfixturevalue("subset_dir")
    path = Path(env).resolve()
    if not path.is_dir():
        pytest.fail(f"AILOAD_SHARED_DATA={env!r} is not a folder; unset it to use the subsets "
                    f"in tests/data, or {HOW_TO_GET}")
    return path


@pytest.fixture(scope="session")
def full_data_dir() -> Path:
    """The full shared data set, for checks the subsets cannot make (skipped without it)."""
    env = os.environ.get("AILOAD_SHARED_DATA")
    path = Path(env).resolve() if env else FULL_DEFAULT
    if not path.is_dir():
        pytest.skip(f"needs the full shared data set (not found at {path}): {HOW_TO_GET}")
    return path
