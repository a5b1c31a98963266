"""Field types shared by every typed model: quantities that must carry their unit."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from isthmus import units


def _unit_string(parse, example: str):
    def check(value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, str):
            raise ValueError(
                f"{value!r} has no unit; write it as a string with a unit, e.g. '{example}'"
            )
        parse(value)
        return value

    return BeforeValidator(check)


Time = Annotated[str, _unit_string(units.time_ps, "1us")]
Rate = Annotated[str, _unit_string(units.rate_bps, "10Gbps")]
Size = Annotated[str, _unit_string(units.size_bytes, "1500B")]
QueueLimit = Annotated[str, _unit_string(units.limit, "250pkts")]
# Counts the engine holds in 32 bits.
PositiveInt = Annotated[int, Field(gt=0, lt=2**32)]
Index = Annotated[int, Field(ge=0, lt=2**32)]
Seed = Annotated[int, Field(ge=0, lt=2**64)]


class Strict(BaseModel):
    """Typed, frozen, no unknown keys, and no silent conversions: `true` is not a seed,
    "1" is not a count and 2.0 is not an integer (a float field takes an integer)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
