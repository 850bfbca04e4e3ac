"""Standard and user power networks as pandapower nets.

``load("cigre_mv")`` returns a fresh pandapower net each call, so studies can never leak
changes into each other. User networks are read with pandapower's own readers: pandapower
JSON, MATPOWER ``.m``/``.mat`` (via :mod:`pandapower.converter`).

A network file is data, and may come from anyone. pandapower's JSON loader imports whatever
Python module a file names in its ``_module`` fields (and looks up the ``_class`` there), so a
crafted file can run code while it is read. :func:`load` therefore reads the JSON itself first
and refuses every object outside :data:`ALLOWED_MODULES`, naming it, before pandapower sees the
file.
"""

from __future__ import annotations

import importlib

import difflib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandapower as pp
import pandapower.networks as pn

from aiload.errors import InputError

__all__ = ["load", "available", "ALLOWED_MODULES"]

#: the packages whose objects a network JSON file may name (``_module``): pandapower's own
#: classes and the pandas/numpy/geometry types it writes
ALLOWED_MODULES = ("pandapower", "pandas", "numpy", "shapely", "geojson", "geopandas")


def _cigre_mv() -> pp.pandapowerNet:
    return pn.create_cigre_network_mv(with_der=False)


_NETWORKS: dict[str, tuple[Callable[[], pp.pandapowerNet], str]] = {
    "cigre_mv": (_cigre_mv, "CIGRE MV benchmark, 20 kV, 15 buses (no DER)"),
    "cigre_hv": (pn.create_cigre_network_hv, "CIGRE HV benchmark, 220/380 kV, 13 buses"),
    "case33bw": (pn.case33bw, "IEEE 33-bus radial distribution feeder (Baran & Wu), 12.66 kV"),
    "case39": (pn.case39, "IEEE 39-bus New England system (MATPOWER data), 345 kV"),
    "case118": (pn.case118, "IEEE 118-bus transmission system"),
    "case300": (pn.case300, "IEEE 300-bus transmission system"),
}


def available() -> dict[str, str]:
    """Names of the bundled networks with a one-line description each."""
    return {name: desc for name, (_, desc) in _NETWORKS.items()}


def load(name_or_path: str | Path) -> pp.pandapowerNet:
    """Load a standard network by name, or a user network from a file.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        One of :func:`available` (``"cigre_mv"``, ``"cigre_hv"``, ``"case33bw"``,
        ``"case118"``, ``"case300"``), or a path to a pandapower JSON file (``.json``) or a
        MATPOWER case (``.m`` or ``.mat``).

    Returns
    -------
    pandapower.pandapowerNet
        A new net; element powers in [MW]/[MVAr], voltages in [kV].

    Examples
    --------
    >>> from grid import networks
    >>> net = networks.load("cigre_mv")
    >>> len(net.bus)
    15
    """
    key = str(name_or_path)
    if key in _NETWORKS:
        return _NETWORKS[key][0]()
    path = Path(key)
    suffix = path.suffix.lower()
    if suffix in {".json", ".m", ".mat"}:
        if not path.is_file():
            raise InputError(
                f"network file {str(path)!r} does not exist; give an existing pandapower JSON or "
                "MATPOWER .m/.mat file, or one of the names " + ", ".join(_NETWORKS) + "."
            )
        if suffix == ".json":
            return _from_json(path)
        from pandapower.converter.matpower import from_mpc

        if suffix == ".m":
            try:
                import matpowercaseframes  # noqa: F401  (pandapower reads .m files with it)
            except ImportError:
                raise InputError(
                    f"reading the MATPOWER script {str(path)!r} needs the package "
                    "'matpowercaseframes' (pip install matpowercaseframes); or save the case "
                    "as .mat in MATPOWER/Octave (savecase('case.mat', mpc)) and pass that."
                ) from None
        return from_mpc(str(path))
    hint = difflib.get_close_matches(key.lower(), list(_NETWORKS), n=1, cutoff=0.5)
    did_you_mean = f" Did you mean {hint[0]!r}?" if hint else ""
    raise InputError(
        f"unknown network {key!r}.{did_you_mean} Available names: {', '.join(_NETWORKS)}; "
        "or give a path to a pandapower .json or MATPOWER .m/.mat file."
    )


def _objects(value: Any) -> Iterator[tuple[Any, Any]]:
    """Every ``(_module, _class)`` pair in a parsed pandapower JSON document.

    pandapower nests JSON documents as strings (a table's ``_object``, a controller's state),
    and decodes them later with the same hook, so strings that hold JSON are searched too.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "_module" in item and "_class" in item:
                yield item["_module"], item["_class"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.lstrip()[:1] in ("{", "["):
            try:
                stack.append(json.loads(item))
            except ValueError:
                pass  # text that only starts like JSON: pandapower reads it as text too


def _allowed(module: Any) -> bool:
    return isinstance(module, str) and any(
        module == root or module.startswith(root + ".") for root in ALLOWED_MODULES
    )


#: ``_class`` values that name no class but make pandapower look up a callable by name
#: (``_object``) in the module: refused whatever the module
_CALLABLE_CLASSES = ("function", "method", "builtin_function_or_method")


def _class_problem(module: str, cls: Any) -> str | None:
    """Why ``(module, cls)`` is not a class a network file may hold, or None.

    Our own check, not pandapower's (its guard differs between releases): ``cls`` must be a
    plain public name, not one that makes the decoder fetch a callable, and must name a
    class (a ``type``) of that module.
    """
    if not isinstance(cls, str) or not cls.isidentifier() or cls.startswith("_"):
        return f"the class name {cls!r} is not a plain public name"
    if cls in _CALLABLE_CLASSES:
        return (f"{cls!r} makes pandapower fetch a callable by name from {module!r}, which a "
                "network never needs")
    try:
        found = getattr(importlib.import_module(module), cls, None)
    except Exception:  # noqa: BLE001 - an unimportable module: not a class we know
        found = None
    if not isinstance(found, type):
        return f"{module}.{cls} is not a class"
    return None


def _from_json(path: Path) -> pp.pandapowerNet:
    """A pandapower JSON file, after checking it names only :data:`ALLOWED_MODULES`' objects."""
    try:
        text = path.read_text(encoding="utf-8")
        document = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(
            f"network file {str(path)!r} cannot be read as JSON ({type(exc).__name__}: {exc}); "
            "give a file written by pandapower.to_json."
        ) from None
    for module, cls in _objects(document):
        if not _allowed(module):
            raise InputError(
                f"network file {str(path)!r} names the object {cls!r} of module {module!r}; "
                "a network file may only hold objects of " + ", ".join(ALLOWED_MODULES) + ". "
                "It was not loaded (pandapower would have imported that module). Re-save the "
                "network with pandapower.to_json from a trusted source."
            )
        problem = _class_problem(module, cls)
        if problem:
            raise InputError(
                f"network file {str(path)!r} names the object {cls!r} of module {module!r}: "
                f"{problem}. It was not loaded. A network file holds pandapower's, pandas' "
                "and numpy's classes only; re-save the network with pandapower.to_json from a "
                "trusted source."
            )
    try:
        net = pp.from_json_string(text, convert=True)
    except Exception as exc:  # pandapower raises many types on a malformed network
        net = exc
    if not isinstance(net, pp.pandapowerNet):
        got = f"{type(net).__name__}: {net}" if isinstance(net, Exception) else type(net).__name__
        raise InputError(
            f"network file {str(path)!r} is JSON but not a pandapower network ({got}); give a "
            "file written by pandapower.to_json."
        )
    return net
