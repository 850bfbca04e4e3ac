"""The ``aiload`` subcommands that belong to the core package.

Each command lives beside the code it drives and exposes ``register(subparsers)``; this
module only lists them. The console script itself is :func:`scenarios.cli.main`, which
adds ``run`` and ``sweep`` (the dependency points from ``scenarios`` to ``aiload``).
"""

from __future__ import annotations

import argparse
import importlib

__all__ = ["COMMAND_MODULES", "register_all"]

#: modules that provide ``register(subparsers)``, in the order ``--help`` lists them
COMMAND_MODULES = (
    "aiload.profiles.cli",
    "aiload.metrics.cli",
    "aiload.measure.cli",
)


def register_all(subparsers: argparse._SubParsersAction, modules=COMMAND_MODULES) -> None:
    """Add every core subcommand to ``subparsers``."""
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # only tolerate the command module itself being absent, never a broken import
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
