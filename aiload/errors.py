"""Exceptions raised by aiload.

Every error says what was received, what was expected and how to fix it.
"""

from __future__ import annotations

__all__ = ["AiloadError", "InputError", "TraceFormatError", "InputWarning"]


class AiloadError(Exception):
    """Base class of aiload's own errors."""


class InputError(AiloadError, ValueError):
    """Bad input given to an aiload function (a ``ValueError``)."""


class TraceFormatError(InputError):
    """A measurement file that cannot be read as the format it claims to be.

    The message names the file, the line or column, what was found and what was expected.
    """


class InputWarning(UserWarning):
    """An input that is possible but suspicious (e.g. one trace sample 10^6 x the median).

    Turn it into an error with ``warnings.simplefilter("error", aiload.errors.InputWarning)``.
    """
