"""The ``aiload`` command line.

``aiload`` alone prints the commands; ``aiload COMMAND --help`` explains one. Core commands
(``profiles``, ``metrics``, ``record``) come from :mod:`aiload.cli`; study commands (``run``,
``sweep``) from this package.

Only the module of the command being run is imported: ``aiload --help`` lists the commands
from :data:`COMMANDS` without importing pandas, scipy or matplotlib (a test checks the help
lines there against each module's own).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import warnings

from aiload import __version__
from aiload.cli import COMMAND_MODULES, register_all
from aiload.errors import AiloadError, InputWarning
from aiload.outputs import Interrupted, signals_as_interrupts

__all__ = ["COMMANDS", "build_parser", "main"]

SCENARIO_COMMAND_MODULES = ("scenarios.commands",)

#: command -> (module whose ``register(subparsers)`` adds it, its one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "profiles": ("aiload.profiles.cli",
                 "list the bundled per-node power profiles (measured and synthesised)"),
    "metrics": ("aiload.metrics.cli",
                "peaks, ramps, swings, spectra and billing demand of traces or facility outputs"),
    "record": ("aiload.measure.cli", "record GPU (NVML) and CPU (RAPL) power while a command runs"),
    "run": ("scenarios.commands", "run a scenario: facility, metrics, grid studies, sizing, report"),
    "sweep": ("scenarios.commands", "Monte Carlo and parameter sweeps of the facility on Dask"),
}


def build_parser(command: str | None = None, *, full: bool = True) -> argparse.ArgumentParser:
    """The ``aiload`` parser.

    Parameters
    ----------
    command : str, optional
        Register this command completely (importing its module).
    full : bool
        Register every command completely; with False the others are listed by name and help
        only, so that building the parser imports nothing heavy.
    """
    parser = argparse.ArgumentParser(
        prog="aiload",
        description=(
            "Plan the power supply of AI data centers: measured GPU power -> facility load -> "
            "grid studies and on-site supply sizing."
        ),
    )
    parser.add_argument("--version", action="version", version=f"aiload {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if full:
        register_all(sub)
        register_all(sub, SCENARIO_COMMAND_MODULES)
        return parser
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command][0]).register(sub)
    # the order of --help: core commands, then the study commands
    order = [*(n for n, (m, _) in COMMANDS.items() if m in COMMAND_MODULES),
             *(n for n, (m, _) in COMMANDS.items() if m not in COMMAND_MODULES)]
    for name in order:
        if name not in sub.choices:
            sub.add_parser(name, help=COMMANDS[name][1])
    return parser


def _command_of(argv: list[str]) -> str | None:
    # the top level takes only -h/--version, so the first other word names the command
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv), full=False)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    try:
        # SIGTERM runs the same cleanup as Ctrl-C: temporary files and worker processes go
        with signals_as_interrupts(), _plain_input_warnings(args.command):
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


@contextlib.contextmanager
def _plain_input_warnings(command: str):
    """aiload's own warnings (:class:`~aiload.errors.InputWarning`) as ``aiload COMMAND:
    warning: ...`` lines on stderr, without the source file and line Python shows (they are
    about the user's input, not the code); every other warning as Python shows it."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, InputWarning):
            print(f"aiload {command}: warning: {message}", file=sys.stderr if file is None
                  else file)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
