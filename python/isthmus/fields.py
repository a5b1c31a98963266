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
PositiveInt = Annotated[int, Field(gt=0)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
