"""The test-data subsets in tests/data: within budget, credited, and unchanged from their source.

Each source folder's SOURCE.md lists SHA-256 checksums of the original files; every subset file
that is not cut (tests/data/make_subsets.py names the cuts) must match them byte for byte.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path


SUBSETS = Path(__file__).resolve().parent / "data"
_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \| `([0-9a-f]{64})` \|", re.MULTILINE)


def _make_subsets():
    spec = importlib.util.spec_from_file_location("make_subsets", SUBSETS / "make_subsets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_total_size_is_within_the_documented_budget():
    budget = _make_subsets().BUDGET_BYTES
    total = sum(p.stat().st_size for p in SUBSETS.rglob("*") if p.is_file())
    assert budget == 15_000_000
    assert total <= budget, f"tests/data holds {total / 1e6:.2f} MB, over the 15 MB budget"
    assert f"{budget // 1_000_000} MB" in (SUBSETS / "README.md").read_text(encoding="utf-8")


def test_every_source_folder_has_its_source_md_and_is_listed_in_the_readme():
    readme = (SUBSETS / "README.md").read_text(encoding="utf-8")
    folders = [p for p in SUBSETS.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert len(folders) >= 8
    for folder in folders:
        assert (folder / "SOURCE.md").is_file(), f"{folder.name} has no SOURCE.md"
        assert f"`{folder.name}/`" in readme, f"tests/data/README.md does not list {folder.name}/"


def test_uncut_files_match_the_checksums_in_their_source_md(subset_dir: Path):
    subsets = _make_subsets().SUBSETS
    checked = 0
    for folder in sorted(p for p in subset_dir.iterdir() if p.is_dir()):
        if subsets.get(folder.name, {}).get("cut"):
            continue
        listed = {rel: (int(size), sha) for rel, size, sha in
                  _ROW.findall((folder / "SOURCE.md").read_text(encoding="utf-8"))}
        for rel, (size, sha) in listed.items():
            path = folder / rel
            if path.is_file():
                data = path.read_bytes()
                assert (len(data), hashlib.sha256(data).hexdigest()) == (size, sha), rel
                checked += 1
    # GPT-3 and LoRA node logs, the H200 logs, Hawk/LUMI, the Harvard snapshot
    assert checked >= 150


def test_the_cut_servegen_files_keep_time_and_rate(subset_dir: Path):
    files = sorted((subset_dir / "servegen-bailian/data/language/m-large").glob("chunk-*-trace.csv"))
    assert len(files) == 50  # SOURCE.md: 50 m-large chunk traces
    first = files[0].read_text(encoding="utf-8").splitlines()
    assert len(first) == 2016  # 14 days of 10-min windows
    assert all(len(line.split(",")) == 2 for line in first)
    assert [int(line.split(",")[0]) for line in first[:3]] == [0, 600, 1200]


def test_unpacking_puts_files_where_the_full_set_has_them(subset_dir: Path):
    out = subset_dir
    assert not list(out.rglob("subset.tar.xz")) and not list(out.rglob("*.py"))
    gpt3 = out / ("mlperf-training-v4.0-smc-power/smc-ac-power/results/64xSMC-H100-SXM-80GB/"
                  "gpt3/power/result_5848-240517221859825376616_2")
    assert len(list(gpt3.glob("node_*.txt"))) == 64
