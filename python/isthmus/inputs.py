"""Files a scenario names: found safely, read as text, quoted briefly.

A scenario may name other files (a topology edge list, a flow list, a size
distribution, a link trace) relative to its own folder. While a scenario is being
built (`confined_to`), those names must stay inside that folder, or inside a folder the
user named on the command line (`isthmus run --allow-path DIR`): a scenario received
from someone else cannot read `/etc/passwd` or `../../secrets`. Only regular files are
read (not folders, FIFOs or devices), at most `MAX_INPUT_BYTES`, and error messages
quote at most a short, escaped excerpt of what they found.
"""

from __future__ import annotations

import contextlib
import contextvars
import stat
from collections.abc import Iterator
from pathlib import Path

MAX_INPUT_BYTES = 256 * 2**20
EXCERPT_CHARS = 40

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


def excerpt(text: str) -> str:
    """A short, escaped quotation of `text` for an error message."""
    shown = text[:EXCERPT_CHARS]
    return repr(shown) + ("..." if len(text) > EXCERPT_CHARS else "")


def user_file(name: str, base: Path, what: str) -> Path:
    """The regular file `name` (relative to `base`) a scenario or a caller names."""
    if "\x00" in name:
        raise ValueError(f"{what} {excerpt(name)}: a file name cannot hold a NUL character")
    path = base / name
    roots = _confinement.get()
    if roots is not None:
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root) for root in roots):
            raise ValueError(
                f"{what} '{name}' lies outside the scenario's folder ({roots[0]}); keep the "
                "file beside the scenario, or allow its folder explicitly with "
                "`isthmus run --allow-path DIR`"
            )
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ValueError(f"{what} '{path}' does not exist") from None
    except OSError as e:
        raise ValueError(f"{what} '{path}' cannot be read: {e.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{what} '{path}' is a folder; name a file")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} '{path}' is not a regular file (a FIFO or a device?)")
    if info.st_size > MAX_INPUT_BYTES:
        raise ValueError(
            f"{what} '{path}' is {info.st_size} bytes; inputs are at most {MAX_INPUT_BYTES}"
        )
    return path


def read_text(path: Path, what: str) -> str:
    """`path` as UTF-8 text; anything else is one error naming the file and the byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{what} '{path}' is not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); "
            "save it as UTF-8"
        ) from None
