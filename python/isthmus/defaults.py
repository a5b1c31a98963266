"""Defaults the engine defines (its network-wide configuration, AQMs, BCN, DCQCN), read
from it once, so Python, scenario files and Rust can never state them differently.
TCP's are in `isthmus.transport`."""

from __future__ import annotations

from isthmus import _core
from isthmus.units import format_time
from isthmus.wire import deserialised

ENGINE = deserialised(_core.engine_defaults())


def duration(section: str, key: str) -> str:
    """A default duration as a unit string ("5.000ms")."""
    return format_time(ENGINE[section][key])


def rate(section: str, key: str) -> str:
    """A default rate as a unit string ("3000000bps")."""
    return f"{ENGINE[section][key]}bps"


def number(section: str, key: str) -> float:
    return ENGINE[section][key]


def queue_limit(which: str) -> str:
    """The default limit of `which` ("host_queue" or "switch_queue") as a unit string."""
    unit, count = ENGINE["engine"][which]["limit"]
    return f"{count}{'pkts' if unit == 'packets' else 'B'}"


TTL: int = ENGINE["engine"]["ttl"]
"""The hops packets leave their host with (IP's customary 64)."""
