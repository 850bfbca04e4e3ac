"""Read scenario files: TOML -> validated :class:`~scenarios.schema.Scenario`.

Errors name the file, the field path (``grid.bus``), the line where it is written, the bad
value and what is expected; unknown keys get the nearest allowed name. Everything that can be
checked without computing (a weather file that is not there included) is checked here, so a
bad file fails before any simulation starts.
"""

from __future__ import annotations

import copy
import difflib
import re
import tomllib
import typing
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from aiload.errors import InputError
from scenarios.messages import as_typed as _toml
from scenarios.messages import form_hint, plain, shown
from scenarios.microgrid_options import options_problem
from scenarios.schema import Scenario

__all__ = [
    "ScenarioError",
    "load_scenario",
    "bundled_names",
    "resolve_source",
    "parse_set",
    "apply_overrides",
    "key_lines",
]

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


class ScenarioError(InputError):
    """A scenario file that does not validate; the message names file, field and line."""


def bundled_names() -> list[str]:
    """Names of the scenarios shipped in ``scenarios/bundled`` (without ``.toml``)."""
    folder = resources.files("scenarios") / "bundled"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def resolve_source(name_or_path: str | Path) -> Path:
    """Path of a scenario file given a path or a bundled name.

    Raises
    ------
    ScenarioError
        Neither an existing file nor a bundled name; lists the bundled names and the nearest.
    """
    path = Path(name_or_path).expanduser()  # a quoted '~/site.toml' is not expanded by the shell
    if path.is_file():
        return path
    if path.is_dir():
        inside = sorted(p.name for p in path.glob("*.toml"))
        raise ScenarioError(
            f"scenario {str(name_or_path)!r} is a folder, not a scenario file; expected a .toml "
            "file or a bundled name. "
            + (f"Its .toml files: {', '.join(inside[:10])}; give one of them, e.g. "
               f"{str(path / inside[0])!r}." if inside else
               f"It holds no .toml file. Bundled scenarios: {', '.join(bundled_names())}.")
        )
    names = bundled_names()
    stem = str(name_or_path)[:-5] if str(name_or_path).endswith(".toml") else str(name_or_path)
    if stem in names:
        return Path(str(resources.files("scenarios") / "bundled" / f"{stem}.toml"))
    near = difflib.get_close_matches(stem, names, n=1)
    hint = f" Did you mean {near[0]!r}?" if near else ""
    raise ScenarioError(
        f"scenario {str(name_or_path)!r}: no such file and no bundled scenario of that name.{hint} "
        f"Bundled scenarios: {', '.join(names)}; or give the path of a .toml file."
    )


def _split_key(text: str) -> tuple[str, ...]:
    parts = re.findall(r"\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+", text)
    return tuple(p[1:-1] if p[0] in "\"'" else p for p in parts)


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Map every table and key path written in a TOML text to its (1-based) line number.

    A scan of the text, not a second parser: headers ``[a.b]`` set the current table and
    ``key = ...`` (dotted keys included) adds a path under it. The k-th ``[[a.b]]`` table of
    an array is listed as ``("a", "b", "k")`` (0-based, as in a validation error's location)
    and ``[a.b.c]`` after it as ``("a", "b", "k", "c")``. Keys inside inline tables are not
    listed; callers fall back to the longest listed prefix.
    """
    lines: dict[tuple[str, ...], int] = {}
    counts: dict[tuple[str, ...], int] = {}  # array-of-tables path -> tables seen so far
    table: tuple[str, ...] = ()
    in_multiline = False
    for number, line in enumerate(text.splitlines(), start=1):
        if in_multiline:
            if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                in_multiline = False
            continue
        array = _ARRAY_HEADER.match(line)
        header = array or _HEADER.match(line)
        if header:
            table = _resolve(_split_key(header.group(1)), counts, new_element=bool(array))
            if array:
                lines.setdefault(table[:-1], number)
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault(table + _split_key(key.group(1)), number)
            if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                in_multiline = True
    return lines


def _resolve(parts: tuple[str, ...], counts: dict[tuple[str, ...], int], *,
             new_element: bool) -> tuple[str, ...]:
    """A header's path with the index of the current element of each array of tables in it."""
    resolved: tuple[str, ...] = ()
    for i, part in enumerate(parts):
        resolved += (part,)
        if new_element and i == len(parts) - 1:
            counts[resolved] = counts.get(resolved, 0) + 1
        if resolved in counts:
            resolved += (str(counts[resolved] - 1),)
    return resolved


def _line_of(loc: Sequence[Any], lines: Mapping[tuple[str, ...], int]) -> int | None:
    path = tuple(str(p) for p in loc)
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def _model_at(loc: Sequence[Any]) -> type[BaseModel] | None:
    """The pydantic model that holds the last element of ``loc`` (for 'did you mean')."""
    model: type[BaseModel] = Scenario
    parts = list(loc[:-1])
    for i, part in enumerate(parts):
        if isinstance(part, int):  # an element of a list of tables: same model as the list
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        # [facility] or [[facility]]: the table's model, or the array's when a position follows
        in_array = i + 1 < len(loc) and isinstance(loc[i + 1], int)
        nested = _models_in(field.annotation, in_array)
        if not nested:
            return None
        model = nested[0]
    return model


def _models_in(annotation: Any, in_array: bool) -> list[type[BaseModel]]:
    """The table models an annotation holds (through Annotated, unions and lists); those
    inside a list first when ``in_array``."""
    direct: list[type[BaseModel]] = []
    listed: list[type[BaseModel]] = []

    def walk(node: Any, inside: bool) -> None:
        if isinstance(node, type) and issubclass(node, BaseModel):
            (listed if inside else direct).append(node)
            return
        origin = typing.get_origin(node)
        for arg in typing.get_args(node):
            walk(arg, inside or origin is list)

    walk(annotation, False)
    return listed + direct if in_array else direct + listed


def _override_of(loc: Sequence[Any], overrides: Mapping[str, Any]) -> str | None:
    """The ``--set`` key that put the value at ``loc`` there (or below it), if any."""
    dotted = ".".join(str(p) for p in loc)
    # the key itself, else a table set whole that holds it, else a key set inside it
    for match in (dotted.__eq__, lambda k: dotted.startswith(k + "."),
                  lambda k: k.startswith(dotted + ".")):
        for key in overrides:
            if match(key):
                return key
    return None


def _describe(err: dict[str, Any], lines: Mapping[tuple[str, ...], int],
              overrides: Mapping[str, Any] | None = None) -> str:
    loc = [p for p in err["loc"] if not (isinstance(p, str) and "[" in p)]
    field = ".".join(str(p) for p in loc) or "(top level)"
    key = _override_of(loc, overrides or {}) if loc else None
    if key is not None:
        # the value came from the command line, not from a line of the file
        where = f"--set {key}={_toml(overrides[key])}: "
        if err["type"] == "value_error" and isinstance(err.get("input"), Mapping):
            # a check across a table: every --set inside it may be the one to change
            dotted = ".".join(str(p) for p in loc)
            inside = [k for k in overrides if k.startswith(dotted + ".")] or [key]
            where = ", ".join(f"--set {k}={_toml(overrides[k])}" for k in inside) + ": "
        if err["type"] == "missing":
            table = ".".join(str(p) for p in loc[:-1])
            return (f"  {where}field {field!r} is required but missing: --set made a [{table}] "
                    f"table the file does not have; add --set {field}=VALUE too.")
    else:
        line = _line_of(loc, lines)
        where = f"line {line}: " if line else ""
    if (err["type"] == "missing" and key is None and loc and tuple(map(str, loc[:-1])) not in lines
            and _made_by_set(loc, overrides or {})):
        table = ".".join(str(p) for p in loc[:-1])
        made = next(k for k in overrides or {} if k.startswith(table + "."))
        return (f"  --set {made}: field {field!r} is required but missing: --set made a "
                f"[{table}] table the file does not have; add --set {field}=VALUE too.")
    if err["type"] == "extra_forbidden":
        model = _model_at(loc)
        allowed = sorted(model.model_fields) if model else []
        near = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.5)
        hint = f" Did you mean {near[0]!r}?" if near else ""
        return f"  {where}unknown key {field!r}.{hint} Allowed here: {', '.join(allowed)}."
    meaning = _description(loc)
    if err["type"] == "missing":
        return (f"  {where}field {field!r} is required but missing; add it to the file."
                + (f" {field}: {meaning}." if meaning else ""))
    value = err.get("input")
    message = plain(err["msg"].removeprefix("Value error, ")).rstrip(".")
    if err["type"] == "value_error" and isinstance(value, Mapping):
        # a check across the keys of a whole table: name the table, not its contents
        return f"  {where}in table [{field}]: {message}" + ("" if message.endswith("?") else ".")
    text = f"  {where}field {field!r} = {shown(value)}: {message}"
    hint = form_hint(err["type"], field, from_set=key is not None, value=value,
                     of_tables=_holds_tables(loc))
    if hint:
        text += f"; {hint}"
    if meaning and err["type"] != "value_error":
        # pydantic's own checks (types, bounds) say nothing of what the field is
        text += f". {field}: {meaning}"
    return text + ("" if text.endswith("?") else ".")  # a "did you mean" ends it already


def _holds_tables(loc: Sequence[Any]) -> bool:
    """The field at ``loc`` is a list of tables (``[[facility.streams]]``)."""
    model = _model_at(loc) if loc else None
    info = model.model_fields.get(str(loc[-1])) if model else None
    if info is None or typing.get_origin(info.annotation) is not list:
        return False
    items = typing.get_args(info.annotation)
    return bool(items) and isinstance(items[0], type) and issubclass(items[0], BaseModel)


def _description(loc: Sequence[Any]) -> str | None:
    """The schema's description of the field at ``loc`` (list positions left out)."""
    path = list(loc)
    while path and isinstance(path[-1], int):
        path.pop()
    model = _model_at(path) if path else None
    info = model.model_fields.get(str(path[-1])) if model else None
    return info.description if info is not None else None


def _made_by_set(loc: Sequence[Any], overrides: Mapping[str, Any]) -> bool:
    table = ".".join(str(p) for p in loc[:-1])
    return bool(table) and any(k.startswith(table + ".") for k in overrides)


def parse_set(text: str) -> tuple[str, list[Any]]:
    """Parse ``--set a.b=v1,v2`` into ``("a.b", [v1, v2])``; values are read as TOML literals.

    ``--set facility.utilization=0.2,0.4`` gives floats, ``--set facility.end=2024-01-02T00:00:00Z``
    a date-time, anything that is not a TOML literal stays a string. A value in brackets or
    braces is one TOML array or table: ``--set 'grid.studies=["timeseries","load_loss"]'``.
    """
    if "=" not in text:
        raise ScenarioError(
            f"--set {text!r}: expected FIELD=VALUE[,VALUE...], e.g. --set facility.utilization=0.4"
        )
    field, raw = text.split("=", 1)
    field = field.strip()
    if not field or not raw.strip():
        raise ScenarioError(f"--set {text!r}: both the field and a value are needed (FIELD=VALUE)")
    if any(not part.strip() for part in field.split(".")):
        raise ScenarioError(
            f"--set {text!r}: the field {field!r} has an empty part between dots; expected "
            "names joined by single dots, e.g. --set facility.utilization=0.4"
        )
    stripped = raw.strip()
    if stripped[:1] in "[{":
        # a TOML array or inline table is ONE value: --set 'grid.studies=["timeseries"]'
        try:
            return field, [tomllib.loads(f"v = {stripped}")["v"]]
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(
                f"--set {text!r}: {stripped!r} is not a valid TOML array or inline table "
                f"({exc}); close every bracket and brace and write text in double quotes, the "
                "whole --set in single quotes for the shell, e.g. "
                "--set 'grid.studies=[\"timeseries\", \"load_loss\"]' or "
                "--set 'facility.overrides={ nodes = 100 }'"
            ) from None
    if stripped[:1] in "\"'":
        # a quoted TOML string is ONE value, commas and all: --set 'description="a, b"'
        try:
            return field, [tomllib.loads(f"v = {stripped}")["v"]]
        except tomllib.TOMLDecodeError:
            pass  # several quoted values, "a","b": split below
    values = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            raise ScenarioError(
                f"--set {text!r}: an empty value between commas (or after the last); expected "
                f"FIELD=VALUE or FIELD=V1,V2,... with a value after every comma, e.g. "
                f"--set {field}={','.join(v.strip() for v in raw.split(',') if v.strip()) or 'VALUE'}"
            )
        try:
            values.append(tomllib.loads(f"v = {item}")["v"])
        except tomllib.TOMLDecodeError:
            values.append(item)
    return field, values


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of the raw TOML dict with dotted-path ``overrides`` set (input unchanged)."""
    data = copy.deepcopy(dict(raw))
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        node = data
        for i, part in enumerate(parts[:-1]):
            child = _child(node, part, dotted)
            if child is None and parts[i + 1].isdigit():
                table = ".".join(parts[: i + 1])
                raise ScenarioError(
                    f"--set {dotted}: the scenario has no [[{table}]] tables, so "
                    f"{parts[i + 1]!r} numbers none; write the tables in the file (see "
                    "scenarios/bundled/custom-fleet.toml), then --set can change them."
                )
            if child is None:
                child = node[part] = {}
            if not isinstance(child, (dict, list)):
                raise ScenarioError(
                    f"--set {dotted}: {part!r} is a value, not a table; cannot set a key inside it"
                )
            node = child
        if isinstance(node, list):
            node[_index(node, parts[-1], dotted)] = value
        else:
            node[parts[-1]] = value
    return data


def _index(items: list, part: str, dotted: str) -> int:
    """The list index a dotted-path part names (``streams.0`` is the first [[streams]] table)."""
    if not part.isdigit() or int(part) >= len(items):
        raise ScenarioError(
            f"--set {dotted}: {part!r} must be the 0-based number of an existing table of "
            f"that array (0..{len(items) - 1}), e.g. facility.streams.0.utilization"
        )
    return int(part)


def _child(node: dict | list, part: str, dotted: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, dotted)]
    return node.get(part)


def _decode(path: Path, data: bytes) -> str:
    """The text of a scenario file: UTF-8, with or without the byte-order mark some Windows
    editors write first; anything else is refused with the encoding to save it in."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ScenarioError(
            f"scenario file {str(path)!r}: is UTF-16 text (e.g. saved by Notepad as 'Unicode'); "
            "expected UTF-8. Save it again with the encoding 'UTF-8'."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScenarioError(
            f"scenario file {str(path)!r}: line {line}: byte {data[exc.start]:#04x} is not UTF-8 "
            "text; expected a UTF-8 TOML file (is it a scenario .toml at all?). Save it again "
            "with the encoding 'UTF-8', or give the path of a scenario .toml file."
        ) from None


def _read(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = _decode(path, path.read_bytes())
    except OSError as exc:
        raise ScenarioError(f"scenario file {str(path)!r}: cannot be read ({exc})") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = str(exc)
        lines = text.splitlines()
        tables = {m.group(1) for line in lines if (m := _HEADER.match(line))}
        arrays = {m.group(1) for line in lines if (m := _ARRAY_HEADER.match(line))}
        if "facility" in tables & arrays:
            fix = ("The file has both a [facility] table and [[facility]] tables; write one "
                   "[facility] table for one facility at grid.bus, or only [[facility]] "
                   "tables (an interconnection queue, each with its bus), not both.")
        elif reason.startswith(("Cannot overwrite a value", "Cannot declare")):
            fix = ("A key or a [table] is written twice there; keep one of them (each key once "
                   "per table, each [table] header once).")
        elif reason.startswith(("Invalid value", "Expected newline or end of document")):
            fix = ("Most often a text value without its double quotes: write freq = \"1min\", "
                   "preset = \"inference-1mw\"; numbers, true/false and date-times "
                   "(2025-01-01T00:00:00Z) take none.")
        else:
            fix = "Check quotes, brackets and that every key = value pair is on one line."
        raise ScenarioError(
            f"scenario file {str(path)!r}: not valid TOML: {reason}. {fix}"
        ) from None


def load_scenario(
    source: str | Path, *, overrides: Mapping[str, Any] | None = None
) -> Scenario:
    """Read, override and validate a scenario.

    Parameters
    ----------
    source : str or pathlib.Path
        A scenario file path or the name of a bundled scenario (see :func:`bundled_names`).
    overrides : mapping, optional
        Dotted field paths to values applied before validation, e.g.
        ``{"facility.end": "2024-01-02T00:00:00Z"}`` (the ``--set`` of the command line).

    Returns
    -------
    Scenario
        The validated scenario; ``site.weather`` made absolute.

    Raises
    ------
    ScenarioError
        Naming the file, each bad field with its line, the value and what is expected.
    """
    path = resolve_source(source)
    text, raw = _read(path)
    lines = key_lines(text)
    data = apply_overrides(raw, overrides or {})
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        details = "\n".join(_describe(e, lines, overrides) for e in exc.errors())
        count = exc.error_count()
        raise ScenarioError(
            f"scenario file {str(path)!r}: {count} problem{'s' if count > 1 else ''}:\n{details}"
        ) from None
    where = _Where(path, lines, overrides or {})
    # the checks below need a validated scenario; each is made, and all problems are said
    # at once, as pydantic's are
    problems: list[tuple[tuple[str, ...], str]] = []
    weather = scenario.site.weather
    if weather is not None:
        weather_path = where.resolve(("site", "weather"), weather)
        if not weather_path.is_file():
            problems.append((("site", "weather"),
                f"field 'site.weather' = {weather!r}: "
                f"no such file ({weather_path}). Give a TMY3 CSV path (relative paths are "
                "relative to the scenario file) or remove the key to use pvlib's bundled year."
            ))
        else:
            site = scenario.site.model_copy(update={"weather": str(weather_path)})
            scenario = scenario.model_copy(update={"site": site})
    if scenario.grid is not None and Path(scenario.grid.network).suffix.lower() in _NETWORK_SUFFIXES:
        network = scenario.grid.network
        network_path = where.resolve(("grid", "network"), network)
        if not network_path.is_file():
            problems.append((("grid", "network"),
                f"field 'grid.network' = {network!r}: no such "
                f"file ({network_path}). Give a pandapower JSON or MATPOWER file (relative paths "
                "are relative to the scenario file) or a bundled network name."
            ))
        else:
            grid = scenario.grid.model_copy(update={"network": str(network_path)})
            scenario = scenario.model_copy(update={"grid": grid})
    if scenario.grid is not None and scenario.grid.dynamics is not None:
        scenario = _dynamics_paths(scenario, where, problems)
    if scenario.microgrid is not None and scenario.microgrid.options:
        problem = options_problem(scenario.microgrid.options)
        if problem is not None:
            problems.append((tuple(problem[0]), problem[1]))
    if scenario.microgrid is not None and "highs_options" in scenario.microgrid.options:
        from microgrid.solve import check_highs_options  # noqa: PLC0415  (pyomo: only if needed)

        try:
            check_highs_options(scenario.microgrid.options["highs_options"],
                                where="microgrid.options.highs_options")
        except InputError as exc:
            problems.append((("microgrid", "options", "highs_options"), str(exc)))
    if len(problems) == 1:
        raise ScenarioError(f"{where.at(problems[0][0])}{problems[0][1]}")
    if problems:
        raise ScenarioError(
            f"scenario file {str(path)!r}: {len(problems)} problems:\n"
            + "\n".join(f"  {where.at(field, header=False)}{text}" for field, text in problems))
    return scenario


_NETWORK_SUFFIXES = (".json", ".m", ".mat")


def _dynamics_paths(scenario: Scenario, where: _Where,
                    problems: list[tuple[tuple[str, ...], str]]) -> Scenario:
    """``grid.dynamics.case`` (unless a bundled name) and ``grid.dynamics.dyr`` made absolute
    against the scenario file's folder, as ``grid.network`` is; a missing file is a problem."""
    from scenarios.schema_dynamics import BUNDLED_CASES  # noqa: PLC0415

    dyn = scenario.grid.dynamics
    update = {}
    for key in ("case", "dyr"):
        value = getattr(dyn, key)
        if value is None or (key == "case" and value in BUNDLED_CASES):
            continue
        path = where.resolve(("grid", "dynamics", key), value)
        if path.is_file():
            update[key] = str(path)
            continue
        what = ("a bundled ANDES case name (" + ", ".join(BUNDLED_CASES) + ") or the path of "
                "an ANDES xlsx/json case or a PSS/E .raw file" if key == "case" else
                "the path of the PSS/E .dyr file of the .raw case")
        problems.append((("grid", "dynamics", key),
            f"field 'grid.dynamics.{key}' = {value!r}: no such file ({path}). Give {what} "
            "(relative paths are relative to the scenario file)."))
    if not update:
        return scenario
    grid = scenario.grid.model_copy(update={"dynamics": dyn.model_copy(update=update)})
    return scenario.model_copy(update={"grid": grid})

class _Where:
    """Where a field of a scenario file is written, and the folder its paths are relative to.

    A path written in the file is relative to the file's folder; one given with ``--set`` is
    relative to the current folder, as any path typed on a command line.
    """

    def __init__(self, path: Path, lines: Mapping[tuple[str, ...], int],
                 overrides: Mapping[str, Any]) -> None:
        self.path, self.lines, self.overrides = path, lines, overrides

    def resolve(self, field: tuple[str, ...], value: str) -> Path:
        given = Path(value).expanduser()
        if given.is_absolute():
            return given
        base = Path.cwd() if ".".join(field) in self.overrides else self.path.parent
        return (base / given).resolve()

    def at(self, field: tuple[str, ...], header: bool = True) -> str:
        """``scenario file 'x.toml':\n  line N: `` (the line left out when not known;
        ``header=False``: only ``line N: ``, for one of several problems)."""
        dotted = ".".join(field)
        for key in self.overrides:
            if dotted == key or dotted.startswith(key + "."):  # set whole or inside a table set
                return f"--set {key}: "
        line = _line_of(field, self.lines)
        where = f"line {line}: " if line else ""
        return f"scenario file {str(self.path)!r}:\n  {where}" if header else where
