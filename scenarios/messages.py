"""Words for pydantic's validation errors in a scenario: what form a value takes in TOML (and
after ``--set``) and what the field means, so that a type error says how to write the value."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["as_typed", "form_hint", "plain", "shown"]

_TABLE = "a table: a [section] header with key = value lines, or { key = value, ... } on one line"
_DATETIME = "an offset date-time without quotes, e.g. 2025-01-01T00:00:00Z"

#: pydantic error type -> how the value is written in a scenario file
_FORMS = {
    "dict_type": _TABLE,
    "model_type": _TABLE,
    "model_attributes_type": _TABLE,
    "list_type": "an array in brackets, e.g. [0.2, 0.4] or [\"timeseries\"]",
    "float_parsing": "a number without quotes, e.g. 0.5",
    "float_type": "a number without quotes, e.g. 0.5",
    "int_parsing": "a whole number without quotes, e.g. 3",
    "int_type": "a whole number without quotes, e.g. 3",
    "int_from_float": "a whole number without quotes, e.g. 3",
    "bool_parsing": "true or false, without quotes",
    "bool_type": "true or false, without quotes",
    "string_type": "text in quotes, e.g. \"1min\"",
    "datetime_type": _DATETIME,
    "datetime_parsing": _DATETIME,
    "datetime_from_date_parsing": _DATETIME,
}

#: the same on the command line, where the shell must keep brackets and braces together
_SET_FORMS = {
    "list_type": "an array in brackets, quoted for the shell, e.g. --set 'FIELD=[...]' "
                 "(numbers bare, text in double quotes)",
    "dict_type": "a table: --set FIELD.KEY=VALUE, or --set 'FIELD={ key = value }'",
    "model_type": "a table: --set FIELD.KEY=VALUE, or --set 'FIELD={ key = value }'",
}


def form_hint(error_type: str, field: str, *, from_set: bool, value: Any = None,
              of_tables: bool = False) -> str | None:
    """How to write a value of the type an error expected, or None for other errors.

    Parameters
    ----------
    error_type : str
        pydantic's error ``type`` (``"list_type"``, ``"float_parsing"`` ...).
    field : str
        The dotted field, put in place of FIELD.
    from_set : bool
        The value came from ``--set`` (command-line spelling).
    value : object, optional
        The value received: a list where one table is expected was written ``[[FIELD]]``.
    of_tables : bool
        The field is a list of tables, written as ``[[FIELD]]`` sections.
    """
    if error_type == "list_type" and of_tables and not from_set:
        return (f"write each table under its own [[{field}]] header (double brackets), not "
                f"[{field}]")
    if (error_type in ("dict_type", "model_type") and isinstance(value, list) and value
            and all(isinstance(v, dict) for v in value) and not from_set):
        return f"write one [{field}] header (single brackets), not [[{field}]]"
    form = (_SET_FORMS.get(error_type) if from_set else None) or _FORMS.get(error_type)
    return None if form is None else "write " + form.replace("FIELD", field)


def plain(message: str) -> str:
    """pydantic's message without Python words ('valid dictionary or instance of X')."""
    if message.startswith("Input should be a valid dictionary"):
        return "Input should be a table"
    return message


def shown(value: Any) -> str:
    """A received value as the user wrote it: date-times in ISO form, others as repr."""
    if isinstance(value, (dt.datetime, dt.date)):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    text = repr(value)
    return text if len(text) <= 120 else text[:100] + " ..."  # a whole table is no help


def as_typed(value: Any) -> str:
    """A value as it would be typed after ``--set FIELD=``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else as_typed(v) for v in value) + "]"
    if isinstance(value, dt.datetime) and value.utcoffset() == dt.timedelta(0):
        return value.isoformat().replace("+00:00", "Z")
    return repr(value) if not hasattr(value, "isoformat") else value.isoformat()
