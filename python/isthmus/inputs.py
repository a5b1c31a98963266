"""Files a scenario names: found safely, read as text, quoted briefly.

A scenario may name other files (a topology edge list, a flow list, a size
distribution, a link trace) relative to its own folder. While a scenario is being
built (`confined_to`), those names must stay inside that folder, or inside a folder the
user named on the command line (`isthmus run --allow-path DIR`): a scenario received
from someone else cannot read `/etc/passwd` or `../../secrets`. A file that ships with
Isthmus is named by its bare name (`bundled_file`): a name with a folder in it is the
user's file and confined like any other. Only regular files are read (not folders, FIFOs
or devices), at most `MAX_INPUT_BYTES`, and error messages quote at most a short,
escaped excerpt of what they found, and only from a file inside a confinement
(`may_quote`): what a file elsewhere holds is never shown.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
from collections.abc import Iterator
from pathlib import Path

MAX_INPUT_BYTES = 256 * 2**20
EXCERPT_CHARS = 40
PATH_CHARS = 200
MESSAGE_CHARS = 300

_confinement: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar(
    "isthmus_input_roots", default=None
)
_allowed: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar(
    "isthmus_allowed_roots", default=()
)


@contextlib.contextmanager
def confined_to(base: Path) -> Iterator[None]:
    """Files named while this is active must lie under `base` or an allowed folder."""
    token = _confinement.set((base.resolve(), *_allowed.get()))
    try:
        yield
    finally:
        _confinement.reset(token)


@contextlib.contextmanager
def allowing(folders: list[Path]) -> Iterator[None]:
    """Folders the user named explicitly: scenario files may read from them too."""
    token = _allowed.set(tuple(f.resolve() for f in folders))
    try:
        yield
    finally:
        _allowed.reset(token)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, escaped quotation of `text` for an error message."""
    shown = text[:limit]
    return repr(shown) + ("..." if len(text) > limit else "")


def shortened(message: str, limit: int = MESSAGE_CHARS) -> str:
    """Another library's message for ours: cut to `limit` characters, what does not print
    (a newline, a terminal escape) escaped."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message[:limit])
    return shown + ("..." if len(message) > limit else "")


def shown_path(path: Path | str) -> str:
    """A file's name for an error message: quoted, escaped, and cut if very long."""
    return excerpt(str(path), PATH_CHARS)


def may_quote(path: Path) -> bool:
    """Whether an error about `path` may quote what it holds: only when it lies inside a
    folder the user confined the scenario to (its own, or one allowed by name). A file
    read outside any confinement, or a bundled one, is shown by name and line only."""
    roots = _confinement.get()
    if roots is None:
        return False
    resolved = path.resolve()
    return any(resolved.is_relative_to(root) for root in roots)


def is_bare_name(name: str) -> bool:
    """Whether `name` is a name and not a path: no folder in it, not `.` or `..`."""
    return name not in ("", ".", "..") and not any(c in name for c in ("/", "\\", "\x00"))


def bundled_file(folder: Path, name: str, suffix: str = "") -> Path | None:
    """The file `name` + `suffix` that ships in `folder`, when `name` is a bare name of
    one; anything path-like is the user's file (`user_file`), never looked up here, so
    `../` cannot climb out of the bundled folder."""
    if not is_bare_name(name):
        return None
    path = folder / f"{name}{suffix}"
    return path if os.path.isfile(path) else None


def named_file(name: str, base: Path, what: str, bundled: list[str]) -> Path:
    """The user's file `name` when no bundled file matched: a bare name that is no file
    in `base` is one error listing the `bundled` names; a path goes to `user_file`."""
    if is_bare_name(name) and not os.path.exists(base / name):
        raise ValueError(
            f"no {what} {excerpt(name)}: not a bundled one ({', '.join(bundled)}) nor a file "
            f"in {shown_path(base)}"
        )
    return user_file(name, base, what)


def user_file(name: str, base: Path, what: str, *, limit: int = MAX_INPUT_BYTES) -> Path:
    """The regular file `name` (relative to `base`) a scenario or a caller names, at most
    `limit` bytes."""
    if "\x00" in name:
        raise ValueError(f"{what} {excerpt(name)}: a file name cannot hold a NUL character")
    path = base / name
    roots = _confinement.get()
    if roots is not None:
        try:
            resolved = path.resolve()
        except OSError as e:
            raise ValueError(f"{what} {shown_path(name)} cannot be read: {e.strerror}") from None
        if not any(resolved.is_relative_to(root) for root in roots):
            raise ValueError(
                f"{what} {shown_path(name)} lies outside the scenario's folder "
                f"({shown_path(roots[0])}); keep the file beside the scenario, or allow its "
                "folder explicitly with `isthmus run --allow-path DIR`"
            )
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ValueError(f"{what} {shown_path(path)} does not exist") from None
    except OSError as e:
        raise ValueError(f"{what} {shown_path(path)} cannot be read: {e.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{what} {shown_path(path)} is a folder; name a file")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} {shown_path(path)} is not a regular file (a FIFO or a device?)")
    if info.st_size > limit:
        raise ValueError(
            f"{what} {shown_path(path)} is {info.st_size} bytes; it may be at most {limit}"
        )
    return path


def read_text(path: Path, what: str) -> str:
    """`path` as UTF-8 text; anything else is one error naming the file and the byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{what} {shown_path(path)} is not UTF-8 text (byte {e.start} is "
            f"{data[e.start]:#04x}); save it as UTF-8"
        ) from None
