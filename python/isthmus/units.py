"""Physical quantities at the Python boundary.

The engine counts time in integer picoseconds, rates in integer bit/s and sizes in
integer bytes. Python callers may pass either those integers or unit strings
("10Gbps", "1us", "300KB", "250pkts"); the strings are parsed by the engine's own
parser, so Python and Rust can never disagree on what a unit means.
"""

from __future__ import annotations

from isthmus import _core

PS_PER_SECOND = 1_000_000_000_000

format_time = _core.format_time


def _quantity(value: int | str, parse, kind: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(
            f"invalid {kind} {value!r}: give a string with a unit (e.g. "
            f"{ {'time': '1us', 'rate': '10Gbps', 'size': '1500B'}[kind]!r}) or an integer"
        )
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid {kind} {value}: must not be negative")
        if value >= 2**64:
            raise ValueError(f"invalid {kind} {value}: too large (at most 2^64 - 1)")
        return value
    return parse(value)


def time_ps(value: int | str) -> int:
    """A duration or instant in picoseconds: "5ms" or an integer count of ps."""
    return _quantity(value, _core.parse_time, "time")


def rate_bps(value: int | str) -> int:
    """A rate in bit/s: "10Gbps" or an integer; zero is rejected."""
    rate = _quantity(value, _core.parse_rate, "rate")
    if rate == 0:
        raise ValueError("invalid rate 0: must be greater than zero")
    return rate


def size_bytes(value: int | str) -> int:
    """A size in bytes: "1500B", "300KB" or an integer."""
    return _quantity(value, _core.parse_size, "size")


def limit(value: int | str) -> tuple[str, int]:
    """A queue limit as ("packets", n) or ("bytes", n): "250pkts" or "300KB"."""
    if isinstance(value, str):
        return _core.parse_limit(value)
    raise ValueError(f"invalid queue limit {value!r}: give packets ('250pkts') or bytes ('300KB')")


def seconds(ps: int | float) -> float:
    return ps / PS_PER_SECOND
