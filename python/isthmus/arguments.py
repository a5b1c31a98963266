"""Arguments of the public Python API, checked where they come in.

The engine stores each number in a fixed width (a local port in 16 bits, a flow id in
32, an entry's priority in 16): a value it cannot hold, a string where a number
belongs or a float where a count belongs is refused here with one `ValueError` that
names the argument and says what it takes, instead of surfacing later as an overflow
or a type error deep in the engine binding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import ValidationError

from isthmus import _core, units

SHOWN_CHARS = 40
# No quantity with a unit is longer than this ("18446744073709551615ps" is 22).
MAX_QUANTITY_CHARS = 64

U8 = 2**8 - 1
U16 = 2**16 - 1
U32 = 2**32 - 1

# Group and meter ids: the engine keeps each switch's groups and meters in tables indexed
# by id, so an id costs memory up to it (2^31 would ask for ~100 GB); it states its bound.
MAX_GROUP_ID: int = _core.MAX_GROUP_ID
MAX_METER_ID: int = _core.MAX_METER_ID
# The most partitions (and threads) a run may have; the engine states it.
MAX_PARTITIONS: int = _core.MAX_PARTITIONS


def shown(value: object) -> str:
    """A short quotation of `value` for an error message (long values are cut)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def whole(value: object, name: str, low: int, high: int, what: str = "") -> int:
    """`value` as an int in low..high; `what` says what it counts, for the message."""
    counts = f" ({what})" if what else ""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer in {low}..{high}{counts}, got {shown(value)}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in {low}..{high}{counts}, got {shown(value)}")
    return int(value)


def optional_whole(value: object, name: str, low: int, high: int, what: str = "") -> int | None:
    return None if value is None else whole(value, name, low, high, what)


def number(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """`value` as a finite float, at least `low` (above it with `low_open`) and at most
    `high`."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number, got {shown(value)}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be a finite number, got {shown(value)}")
    if low is not None and (result <= low if low_open else result < low):
        bound = "above" if low_open else "at least"
        raise ValueError(f"{name} must be {bound} {low:g}, got {shown(value)}")
    if high is not None and result > high:
        raise ValueError(f"{name} must be at most {high:g}, got {shown(value)}")
    return result


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {shown(value)}")
    return bool(value)


def text(value: object, name: str, choices: tuple[str, ...] | None = None) -> str:
    if not isinstance(value, str) or (choices is not None and value not in choices):
        options = f"one of {', '.join(choices)}" if choices else "a string"
        raise ValueError(f"{name} must be {options}, got {shown(value)}")
    return value


def whole_list(
    values: object, name: str, low: int, high: int, what: str = "", *, min_length: int = 0
) -> list[int]:
    """A list (or tuple, or 1-d array) of ints in low..high."""
    if isinstance(values, str | bytes | dict) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of integers, got {shown(values)}")
    items = list(values)  # type: ignore[call-overload]
    if len(items) < min_length:
        raise ValueError(f"{name} needs at least {min_length} item(s), got {len(items)}")
    return [whole(v, f"{name}[{i}]", low, high, what) for i, v in enumerate(items)]


def _quantity(parse: Callable[[Any], Any], kind: str, value: object, name: str) -> Any:
    """`parse(value)`, its error prefixed with `name` (none where `name` is empty: a
    validator whose caller names the field)."""
    prefix = f"{name}: " if name else ""
    if isinstance(value, str) and len(value) > MAX_QUANTITY_CHARS:
        raise ValueError(f"{prefix}{shown(value)} is too long to be a {kind}")
    if isinstance(value, str) and not value.isprintable():
        # The parser would quote it raw, control characters and all.
        raise ValueError(f"{prefix}invalid {kind} {shown(value)}: it holds unprintable characters")
    try:
        return parse(value)
    except ValueError as e:
        raise ValueError(f"{prefix}{e}") from None


def duration(value: object, name: str) -> int:
    """A time ("5ms" or integer ps) named `name` in any message."""
    return _quantity(units.time_ps, "time", value, name)


def rate(value: object, name: str) -> int:
    """A rate ("10Gbps" or integer bit/s, above zero)."""
    return _quantity(units.rate_bps, "rate", value, name)


def size(value: object, name: str) -> int:
    """A size ("1500B" or integer bytes)."""
    return _quantity(units.size_bytes, "size", value, name)


def queue_limit(value: object, name: str) -> tuple[str, int]:
    """A queue limit ("250pkts" or "300KB")."""
    return _quantity(units.limit, "queue limit", value, name)


def callable_argument(value: object, name: str) -> Callable[..., Any]:
    if not callable(value):
        raise ValueError(f"{name} must be callable (a function), got {shown(value)}")
    return value


# The longest a problem's description may be in an error message.
MAX_MESSAGE_CHARS = 200


def checked(build, name: str, *args, **fields):
    """`build(*args, **fields)` (a model), its validation errors as one ValueError line
    naming `name` and each field."""
    try:
        return build(*args, **fields)
    except ValidationError as e:
        problems = []
        for problem in e.errors():
            message = problem["msg"].removeprefix("Value error, ")
            if len(message) > MAX_MESSAGE_CHARS:  # a long bad value, quoted in full
                message = message[:MAX_MESSAGE_CHARS] + "..."
            where = ".".join(str(part) for part in problem["loc"])
            problems.append(f"{where}: {message}" if where else message)
        raise ValueError(f"{name}: {'; '.join(problems)}") from None
