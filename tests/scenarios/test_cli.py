"""scenarios.cli: how the command prints aiload's warnings."""

from __future__ import annotations

import warnings

from aiload.errors import InputWarning
from scenarios.cli import _plain_input_warnings


def test_input_warnings_print_as_plain_lines(capsys):
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        with _plain_input_warnings("run"):
            warnings.warn("outage (a) covers no step of load_kw and is left out", InputWarning)
            warnings.warn("something of a library", UserWarning)
        warnings.warn("after the command", InputWarning)
    # aiload's warning: one plain line, no source file and line of aiload's code
    assert capsys.readouterr().err == (
        "aiload run: warning: outage (a) covers no step of load_kw and is left out\n")
    # another library's warning, and any warning after the command, go to Python's machinery
    assert [(w.category, str(w.message)) for w in log] == [
        (UserWarning, "something of a library"), (InputWarning, "after the command")]
