"""``python -m grid.dynamics prepare``: generate ANDES's code once (about 30 s, then cached)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["prepare"]:
        print("usage: python -m grid.dynamics prepare [--force]", file=sys.stderr)
        return 2
    from grid.dynamics.cases import prepare

    generated = prepare(force="--force" in argv)
    print("ANDES code generated" if generated else "ANDES code already prepared")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
