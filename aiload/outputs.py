"""Output paths that never destroy what aiload did not write.

Every command that writes files goes through this module:

- :func:`check_output_file` and :class:`OutputDir` check a path **before** any work starts:
  a missing or unwritable parent, a folder where a file is expected (or the reverse), the
  current folder, a folder holding the scenario file, or a non-empty folder that is not an
  earlier aiload output are errors that say how to fix them.
- An aiload output folder is recognised by its marker file :data:`MARKER` (JSON: the kind of
  output and the names of the files aiload wrote there). A later run replaces only those
  files; a folder without the marker is written into only with ``overwrite=True``
  (``--overwrite``), and then too only aiload's own files are replaced, nothing else.
- Files are written to a temporary name in the same folder and renamed (:func:`write_atomic`).
  The temporary names carry the writer's process id; :func:`clean_debris` removes those of
  processes that no longer run, so a run killed mid-write leaves at most debris that the next
  run clears. :func:`signals_as_interrupts` turns SIGTERM into an exception, so ``finally``
  blocks (and the cleanup in them) also run when a command is terminated.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path

from aiload._version import __version__
from aiload.errors import InputError

__all__ = ["MARKER", "OutputError", "Interrupted", "OutputDir", "check_output_file",
           "check_parent", "clean_debris", "read_marker", "write_marker", "temp_path",
           "write_atomic", "signals_as_interrupts", "unmarked_output"]

#: the marker file that makes a folder an aiload output
MARKER = ".aiload-output.json"
_STAGING = ".aiload-staging-"
# .NAME.PID-HEX.tmp (files) and .aiload-staging-PID-HEX (folders)
_DEBRIS = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")
_STAGED = re.compile(r"^" + re.escape(_STAGING) + r"(?P<pid>\d+)-[0-9a-f]{8}$")


class OutputError(InputError):
    """An output path that aiload will not write to; the message says why and what to do."""


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM (or SIGINT) arrives during a command."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Raise :class:`Interrupted` on SIGTERM/SIGINT inside the block (main thread only).

    Python's default SIGTERM ends the process without running ``finally`` blocks; with this,
    temporary files are removed and worker processes shut down as on Ctrl-C.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupted(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    previous = {s: signal.signal(s, raise_interrupted) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def temp_path(path: str | os.PathLike) -> Path:
    """A temporary name for ``path`` in its folder: ``.NAME.PID-HEX.tmp``."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def write_atomic(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a temporary name beside ``path``, then rename it to ``path``.

    The temporary file is removed whatever happens, so a failed or interrupted write leaves
    ``path`` as it was.
    """
    path = Path(path)
    tmp = temp_path(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def clean_debris(folder: str | os.PathLike, name: str | None = None, *,
                 any_pid: bool = False) -> list[Path]:
    """Remove aiload's temporary files (and staging folders) of processes no longer running.

    Parameters
    ----------
    folder : path
        The folder to clean (not recursive).
    name : str, optional
        Only the temporary files of this target file name.
    any_pid : bool
        Also those of running processes (for folders that only the caller writes, whose
        writers may be processes on other hosts).

    Returns
    -------
    list of pathlib.Path
        What was removed.
    """
    folder = Path(folder)
    removed = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _DEBRIS.match(entry.name) or _STAGED.match(entry.name)
        if match is None or (not any_pid and _pid_alive(int(match["pid"]))):
            continue
        if name is not None and match.re is _DEBRIS and match["name"] != name:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def check_parent(path: str | os.PathLike, what: str = "output") -> Path:
    """The absolute ``path`` after checking that its parent folder exists and is writable."""
    path = Path(path).expanduser().absolute()
    parent = path.parent
    if not parent.exists():
        raise OutputError(
            f"{what} {str(path)!r}: the folder {str(parent)!r} does not exist; create it first "
            "(mkdir -p) or choose a path in an existing folder."
        )
    if not parent.is_dir():
        raise OutputError(f"{what} {str(path)!r}: {str(parent)!r} is a file, not a folder.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(
            f"{what} {str(path)!r}: no permission to write in {str(parent)!r}; choose a folder "
            "you can write to."
        )
    probe = parent / f".aiload-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:  # access() says yes to root on a file system that refuses writes (/sys, some mounts)
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise OutputError(
            f"{what} {str(path)!r}: cannot write in {str(parent)!r} ({exc.strerror}); choose a "
            "folder you can write to."
        ) from None
    return path


def check_output_file(path: str | os.PathLike, *, overwrite: bool = False,
                      is_ours: Callable[[Path], bool] | None = None,
                      what: str = "output file") -> Path:
    """Check an output file before a run starts; returns its absolute path.

    An existing file is replaced only with ``overwrite=True`` or when ``is_ours(path)`` says
    aiload wrote it. A folder is never replaced by a file. Stale temporary files of this
    name (from a killed run) are removed.
    """
    path = check_parent(path, what)
    if path.is_dir():
        raise OutputError(f"{what} {str(path)!r} is a folder; give a file name, e.g. "
                          f"{str(path / 'out.parquet')!r}.")
    if path.exists() or path.is_symlink():
        if not path.is_file():
            raise OutputError(f"{what} {str(path)!r} exists and is not a regular file.")
        if not overwrite and not (is_ours is not None and is_ours(path)):
            raise OutputError(
                f"{what} {str(path)!r} exists and was not written by aiload; it is left as it "
                "is. Choose another name, delete it, or pass overwrite=True (--overwrite)."
            )
    clean_debris(path.parent, path.name)
    return path


def read_marker(folder: str | os.PathLike) -> dict | None:
    """The marker of an aiload output folder, or None when ``folder`` has none (or a bad one)."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("tool") != "aiload":
        return None
    files = data.get("files")
    data["files"] = [f for f in files if _plain_name(f)] if isinstance(files, list) else []
    stat = data.get("stat")
    data["stat"] = ({name: value for name, value in stat.items() if name in data["files"]
                     and isinstance(value, list) and len(value) == 2
                     and all(type(v) is int for v in value)}
                    if isinstance(stat, dict) else {})
    return data


def _fingerprint(path: Path) -> list[int]:
    info = path.lstat()
    return [info.st_size, info.st_mtime_ns]


def _plain_name(name: object) -> bool:
    # a marker is read from disk: it may only name entries directly in its own folder
    return (isinstance(name, str) and name not in ("", ".", "..", MARKER)
            and "/" not in name and "\\" not in name and "\0" not in name)


def write_marker(folder: str | os.PathLike, kind: str, files: Iterable[str],
                 stat: dict[str, list[int]] | None = None) -> None:
    """Write (atomically) the marker that lists the files aiload wrote in ``folder``.

    ``stat`` maps a name to ``[size_bytes, mtime_ns]`` of the file as aiload wrote it: a
    later run deletes a file it no longer writes only when it still matches (see
    :meth:`OutputDir.commit`).
    """
    body = {"tool": "aiload", "kind": kind, "aiload_version": __version__,
            "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "files": sorted(set(files))}
    if stat:
        body["stat"] = {name: list(stat[name]) for name in sorted(stat) if name in body["files"]}
    write_atomic(Path(folder) / MARKER,
                 lambda tmp: tmp.write_text(json.dumps(body, indent=1), encoding="utf-8"))


def _inside(child: Path, folder: Path) -> bool:
    return child == folder or folder in child.parents


class OutputDir:
    """An output folder, checked on creation, written through a staging folder inside it.

    Parameters
    ----------
    path : path
        The output folder.
    kind : str
        What is written (``"run"``, ``"sweep"``, ``"plots"``): recorded in the marker; an
        output of another kind is not replaced without ``overwrite``.
    overwrite : bool
        Write into a non-empty folder that is not an aiload output (only aiload's own files
        are replaced, nothing else is touched).
    protect : iterable of path
        Files that must not lie inside the folder (the scenario file).
    create_parents : bool
        Create a missing parent folder (for default output paths) instead of refusing.
    recognise : callable, optional
        ``recognise(folder)`` returns the names of an output of this kind written before
        aiload wrote markers (every entry one of its own names), or None.
    owns : callable, optional
        ``owns(name)`` is True for the names this kind of output writes. A file of the
        previous output that this one does not write again is deleted only when its name is
        one of them (any name when ``owns`` is None), it is a regular file (not a link, not a
        folder) directly in the folder, and its size and modification time are those the
        marker recorded when aiload wrote it. A marker edited to list someone else's file
        therefore never gets that file deleted.

    Examples
    --------
    >>> out = OutputDir(tmp / "out", kind="run")          # doctest: +SKIP
    >>> with out:                                          # doctest: +SKIP
    ...     (out.staging / "summary.json").write_text("{}")
    ...     out.commit()
    """

    def __init__(self, path: str | os.PathLike, *, kind: str, overwrite: bool = False,
                 protect: Iterable[str | os.PathLike] = (), create_parents: bool = False,
                 recognise: Callable[[Path], list[str] | None] | None = None,
                 owns: Callable[[str], bool] | None = None) -> None:
        self.path = Path(path).expanduser().absolute()
        self.kind = kind
        self.overwrite = overwrite
        self._recognise = recognise
        self._owns = owns
        self.staging: Path | None = None
        self._created = False
        self._check(protect, create_parents)

    def _check(self, protect: Iterable[str | os.PathLike], create_parents: bool) -> None:
        path = self.path
        real = path.resolve()
        cwd = Path.cwd().resolve()
        if _inside(cwd, real):
            raise OutputError(
                f"output folder {str(path)!r} is the current folder or holds it; aiload writes "
                "into a folder of its own: give a new name, e.g. -o results/run1."
            )
        if real == Path.home().resolve():
            raise OutputError(f"output folder {str(path)!r} is your home folder; give a new "
                              "folder name, e.g. -o ~/aiload-out/run1.")
        if path.exists() and not path.is_dir():
            raise OutputError(
                f"output folder {str(path)!r} is a file, not a folder; it is left as it is. "
                "Give the name of a new or earlier output folder."
            )
        for item in protect:
            item = Path(item).resolve()
            if _inside(item, real):
                raise OutputError(
                    f"output folder {str(path)!r} holds the scenario file {str(item)!r}; "
                    "choose an output folder elsewhere, e.g. -o aiload-out/NAME."
                )
        if create_parents and not path.parent.exists():
            try:
                path.parent.mkdir(parents=True)
            except OSError as exc:
                raise OutputError(f"output folder {str(path)!r}: cannot create its parent "
                                  f"folder ({exc}); give -o a folder you can write to.") from None
        check_parent(path, "output folder")
        if not path.exists():
            return
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"output folder {str(path)!r}: no permission to write in it.")
        marker = self._marker()
        if self.overwrite:
            return
        if marker is not None and marker.get("kind") == self.kind:
            return
        others = sorted(p.name for p in path.iterdir() if not _is_debris(p.name))
        if not others:
            return
        if marker is not None:
            raise OutputError(
                f"output folder {str(path)!r} holds an aiload {marker.get('kind')} output, not "
                f"a {self.kind} output; choose another folder, or pass --overwrite "
                "(overwrite=True) to add this output's files to it."
            )
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise OutputError(
            f"output folder {str(path)!r} is not empty ({shown}) and is not an aiload output "
            f"(no {MARKER} in it); nothing was run. Choose a new folder, or pass --overwrite "
            "(overwrite=True) to write aiload's files into it: only files of those names are "
            "replaced, nothing else is touched."
        )

    @property
    def previous(self) -> list[str]:
        """Names of the files an earlier aiload output of this kind listed in its marker."""
        marker = self._marker()
        if marker is None or marker.get("kind") != self.kind:
            return []
        return marker["files"]

    def _marker(self) -> dict | None:
        marker = read_marker(self.path)
        if marker is None and self._recognise is not None and self.path.is_dir():
            # an output of an aiload version that wrote no marker yet
            files = self._recognise(self.path)
            if files is not None:
                marker = {"tool": "aiload", "kind": self.kind, "files": files}
        return marker

    def __enter__(self) -> OutputDir:
        if not self.path.exists():
            self.path.mkdir()
            self._created = True
        clean_debris(self.path)
        self.staging = self.path / f"{_STAGING}{os.getpid()}-{secrets.token_hex(4)}"
        self.staging.mkdir()
        return self

    def prepare(self) -> OutputDir:
        """Open the folder for direct writes (no staging; e.g. a sweep's task files)."""
        if not self.path.exists():
            self.path.mkdir()
            self._created = True
        clean_debris(self.path)
        return self

    def commit(self) -> list[str]:
        """Move the staged files into the folder, drop files of the previous output that this
        one did not write again (only aiload's own, see ``owns``), and write the marker.
        Returns the names written."""
        if self.staging is None:
            raise RuntimeError("OutputDir.commit: call it inside `with OutputDir(...)`.")
        names = sorted(p.name for p in self.staging.iterdir())
        for name in names:  # all checked before the first file moves
            target = self.path / name
            if target.is_dir() and not target.is_symlink():
                raise OutputError(f"{str(target)!r} is a folder; aiload will not replace it by a file.")
        marker = self._marker()
        previous = self.previous
        recorded = (marker or {}).get("stat") or {}
        # a rename keeps size and modification time: what the staged file has, the placed one has
        stat = {name: _fingerprint(self.staging / name) for name in names}
        # first list everything that is or may be ours, so a crash midway loses nothing
        write_marker(self.path, self.kind, [*previous, *names], {**recorded, **stat})
        for name in names:
            os.replace(self.staging / name, self.path / name)
        for name in sorted(set(previous) - set(names)):
            if self._stale_is_ours(name, recorded.get(name)):
                (self.path / name).unlink()
        write_marker(self.path, self.kind, names, stat)
        return names

    def _stale_is_ours(self, name: str, recorded: list[int] | None) -> bool:
        """Whether a file the previous output listed, and this one does not write, may go."""
        if self._owns is not None and not self._owns(name):
            return False  # not a name this output writes: the marker was edited
        stale = self.path / name
        if stale.is_symlink() or not stale.is_file():
            return False  # aiload writes regular files only
        # the file as aiload left it; a marker without the record (edited, or written before
        # aiload recorded it) is not enough to delete anything
        return recorded is not None and _fingerprint(stale) == recorded

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        if exc_type is not None and self._created:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when still empty


def _is_debris(name: str) -> bool:
    return bool(_DEBRIS.match(name) or _STAGED.match(name))


def unmarked_output(folder: Path, names: Callable[[str], bool], stamp: str) -> list[str] | None:
    """The entries of ``folder`` when it is an aiload output written before markers existed.

    It is one when every entry (debris aside) is a name aiload writes (``names(name)``) and
    the JSON file ``stamp`` among them records an ``aiload_version``; otherwise None.
    """
    entries = sorted(p.name for p in folder.iterdir() if not _is_debris(p.name))
    if stamp not in entries or not all(names(e) for e in entries):
        return None
    try:
        data = json.loads((folder / stamp).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return entries if isinstance(data, dict) and "aiload_version" in data else None
