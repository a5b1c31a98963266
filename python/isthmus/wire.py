"""How a configuration or a command crosses into the engine: as one value of the
engine's own type (`EngineConfig`, `QueueConfig`, `AqmConfig`, `Command`), built here as
plain dicts, lists, numbers and strings in base units (ps, bytes, bit/s; limits as
("packets", n); a kind's tag under "kind"), which the engine reads with serde, filling
in its declared defaults and refusing an unknown field (a scheduler's aside) or kind by
name. Nothing crosses field by field. What the engine hands back comes serialised
(JSON)."""

from __future__ import annotations

import json

_LIMIT_UNITS = ("packets", "bytes")


def deserialised(text: str) -> dict:
    """A value the engine serialised, with limits as ("packets", n) tuples again."""

    def limits_as_tuples(value: object) -> object:
        if isinstance(value, dict):
            return {key: limits_as_tuples(item) for key, item in value.items()}
        if isinstance(value, list):
            if len(value) == 2 and value[0] in _LIMIT_UNITS and isinstance(value[1], int):
                return tuple(value)
            return [limits_as_tuples(item) for item in value]
        return value

    return limits_as_tuples(json.loads(text))
