"""Make the test-data subsets in ``tests/data/`` from the full shared data set.

Run from the repository root::

    python tests/data/make_subsets.py --data ../shared/data

For each source folder in :data:`SUBSETS` it copies the folder's ``SOURCE.md`` (origin, license,
citation, checksums) and the files the tests read, keeping their paths relative to the source
folder. Files are copied byte for byte, except where a ``cut`` is named (documented in
``tests/data/README.md``). A source marked ``pack`` is written as one ``subset.tar.xz``
(deterministic: sorted names, zero times and owners) because its files are large and
repetitive (64 nodes' MLPerf logs: 15 MB of text, 0.2 MB packed); ``tests/conftest.py`` unpacks
it into a temporary folder for each test session. Other files stay plain.

Only the files this script writes are replaced; subsets other people added by hand under
``tests/data/<source>/`` are left alone (list them in the README).
"""

from __future__ import annotations

import argparse
import io
import lzma
import shutil
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: the total size of tests/data the tests may use [bytes] (checked by tests/test_data_subsets.py)
BUDGET_BYTES = 15_000_000


def first_two_columns(text: str) -> str:
    """Keep the first two comma-separated fields of each line (time [s], request rate [1/s])."""
    return "".join(",".join(line.split(",")[:2]) + "\n" for line in text.splitlines())


#: source folder -> the files (globs relative to it) the tests read, how they are cut, packing
SUBSETS: dict[str, dict] = {
    "llnl-last-power-provisioning": {
        "files": ["Hawk_power_15_min.csv", "Lumi_power_10_min.csv",
                  "hlrs_hpl_hpcg_data/*.csv"],  # 64-node HPL/HPCG under caps: power caps
    },
    "wattameter-example-logs": {
        "files": ["nvml_wattameter.log", "rapl_wattameter.log"],
    },
    "nlr-whole-facility-statistics": {
        "files": ["*.csv"],
    },
    "harvard-fasrc-ipmi-snapshot": {
        "files": ["2025-05-29.tar.gz"],  # already compressed: kept as it is
    },
    "nlr-genai-power-profiles": {
        "files": ["01_aggregated_datasets/*/metadata.csv"],
        "pack": True,
    },
    "mlperf-training-v4.0-smc-power": {
        "files": ["smc-ac-power/**/*"],  # the whole folder: four runs, two logs, three systems
        "pack": True,
    },
    "mlperf-inference-v4.1-h200-power": {
        "files": ["closed/**/*"],  # the whole folder: four runs and the system description
        "pack": True,
    },
    "azure-llm-inference-2024-digitised": {
        "files": ["*_10min_digitized.csv"],  # the plots (PNG) are not needed by the tests
    },
    "servegen-bailian": {
        "files": ["data/language/m-large/chunk-*-trace.csv"],
        "cut": first_two_columns,
        "pack": True,
    },
}


def _files(source: Path, patterns: list[str]) -> list[Path]:
    found = sorted({p for pattern in patterns for p in source.glob(pattern) if p.is_file()})
    if not found:
        raise SystemExit(f"{source}: no file matches {patterns}; is --data the shared data folder?")
    return found


def _pack(source: Path, files: list[Path], cut, out: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            data = path.read_bytes()
            if cut is not None:
                data = cut(data.decode("utf-8")).encode("utf-8")
            info = tarfile.TarInfo(path.relative_to(source).as_posix())
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out.write_bytes(lzma.compress(buffer.getvalue(), preset=9 | lzma.PRESET_EXTREME))


def make(data: Path, dest: Path = HERE) -> dict[str, int]:
    """Write every subset of :data:`SUBSETS` from ``data`` into ``dest``; return bytes per source."""
    sizes = {}
    for name, spec in SUBSETS.items():
        source = data / name
        files = _files(source, spec["files"])
        target = dest / name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / "SOURCE.md", target / "SOURCE.md")
        cut = spec.get("cut")
        if spec.get("pack"):
            _pack(source, files, cut, target / "subset.tar.xz")
        else:
            for path in files:
                out = target / path.relative_to(source)
                out.parent.mkdir(parents=True, exist_ok=True)
                if cut is None:
                    shutil.copyfile(path, out)
                else:
                    out.write_text(cut(path.read_text(encoding="utf-8")), encoding="utf-8")
        sizes[name] = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=HERE.parents[1].parent / "shared" / "data",
                        help="the full shared data folder (default: ../shared/data)")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no data folder at {args.data}; pass --data", file=sys.stderr)
        return 2
    sizes = make(args.data)
    for name, size in sizes.items():
        print(f"{name:40s} {size / 1e6:7.2f} MB")
    total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    print(f"{'tests/data in total':40s} {total / 1e6:7.2f} MB (budget {BUDGET_BYTES / 1e6:.2f} MB)")
    return 0 if total <= BUDGET_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
