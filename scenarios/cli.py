"""The ``aiload`` command line.

``aiload`` alone prints the commands; ``aiload COMMAND --help`` explains one. Core commands
(``profiles``, ``metrics``, ``record``) come from :mod:`aiload.cli`; study commands (``run``,
``sweep``) from this package.
"""

from __future__ import annotations

import argparse
import sys

from aiload import __version__
from aiload.cli import register_all
from aiload.errors import AiloadError
from aiload.outputs import Interrupted, signals_as_interrupts

__all__ = ["build_parser", "main"]

SCENARIO_COMMAND_MODULES = ("scenarios.commands",)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aiload",
        description=(
            "Plan the power supply of AI data centers: measured GPU power -> facility load -> "
            "grid studies and on-site supply sizing."
        ),
    )
    parser.add_argument("--version", action="version", version=f"aiload {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    register_all(sub)
    register_all(sub, SCENARIO_COMMAND_MODULES)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    try:
        # SIGTERM runs the same cleanup as Ctrl-C: temporary files and worker processes go
        with signals_as_interrupts():
            return int(args.func(args) or 0)
    except AiloadError as exc:
        print(f"aiload {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else 2
        name = exc.args[0] if isinstance(exc, Interrupted) else "SIGINT"
        print(f"aiload {args.command}: stopped by {name}; no partial output was left",
              file=sys.stderr)
        return 128 + signum


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
