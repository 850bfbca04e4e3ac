"""Check that a built wheel holds every file of the packages' source trees.

Usage: ``python .ci/check_wheel.py dist/aiload-*.whl`` (from the repository root).

Every file under ``aiload/``, ``grid/``, ``microgrid/`` and ``scenarios/`` (modules, bundled
scenarios, profile and facility data, the data credits; ``__pycache__`` aside) must be in the
wheel at the same path, and the credits the report shows must be identical to
``docs/credits.md``. Exits 1 and names each missing file otherwise.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("aiload", "grid", "microgrid", "scenarios")
CREDITS = "scenarios/data/credits.md"


def source_files(root: Path = ROOT) -> set[str]:
    """The files of the package trees, as wheel paths (``aiload/facility/data/x.csv``)."""
    found = set()
    for package in PACKAGES:
        for path in (root / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(path.relative_to(root).as_posix())
    return found


def problems(wheel: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with ``wheel``: missing files, credits that differ from docs/credits.md."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        credits = zf.read(CREDITS).decode("utf-8") if CREDITS in names else None
    out = [f"missing from the wheel: {name}" for name in sorted(source_files(root) - names)]
    if credits is not None and credits != (root / "docs" / "credits.md").read_text(encoding="utf-8"):
        out.append(f"{CREDITS} in the wheel differs from docs/credits.md "
                   "(cp docs/credits.md scenarios/data/credits.md)")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/check_wheel.py WHEEL", file=sys.stderr)
        return 2
    wheel = Path(argv[0])
    found = problems(wheel)
    for line in found:
        print(line, file=sys.stderr)
    if not found:
        print(f"{wheel.name}: all {len(source_files())} package files are in the wheel")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
