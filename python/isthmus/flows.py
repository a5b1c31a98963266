"""Flow workloads: a communication pattern (who sends to whom), an arrival process
(when each sender starts a flow) and a size distribution (how much), generated in the
engine so that a seed gives the same flows everywhere.

Patterns: `random` (each flow to a uniformly random other host), `other_racks` (to a
host on another switch), `all_to_all` (every other host in turn), `permutation` (a
random derangement), `stride` (h to h + stride), `incast` (N senders to one receiver),
`one_to_many` (one sender to N receivers).

Arrivals: `poisson` at a load of each sender's access link; `profile`, Poisson with a
network-wide rate that changes over equal parts of the window (Diolkos's 10 → 20 → 10
flows/s surge); `on_off`, log-normal ON, OFF and inter-arrival times (Benson et al.,
IMC 2010); `batch`, `count` flows from every sender at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

import numpy as np
from pydantic import Field, model_validator

from isthmus import _core, units
from isthmus.fields import Index, PositiveInt, Size, Strict, Time
from isthmus.inputs import excerpt
from isthmus.topology import Topology
from isthmus.workload import SizeDistribution, size_distribution

HostIndex = Index


class Stride(Strict):
    kind: Literal["stride"] = "stride"
    stride: PositiveInt


class Incast(Strict):
    """`senders` hosts, chosen at random, all send to `receiver`."""

    kind: Literal["incast"] = "incast"
    receiver: HostIndex
    senders: PositiveInt


class OneToMany(Strict):
    """`sender` sends to `receivers` hosts chosen at random."""

    kind: Literal["one_to_many"] = "one_to_many"
    sender: HostIndex
    receivers: PositiveInt


SimplePattern = Literal["random", "other_racks", "all_to_all", "permutation"]
Pattern = SimplePattern | Annotated[Stride | Incast | OneToMany, Field(discriminator="kind")]


class Poisson(Strict):
    kind: Literal["poisson"] = "poisson"
    load: Annotated[float, Field(gt=0)]


class Profile(Strict):
    """Network-wide flows per second in each of equal parts of the arrival window."""

    kind: Literal["profile"] = "profile"
    flows_per_second: list[Annotated[float, Field(ge=0)]] = Field(min_length=1)


class LogNormalTime(Strict):
    mean: Time
    sigma: Annotated[float, Field(ge=0)] = 1.0


class OnOff(Strict):
    kind: Literal["on_off"] = "on_off"
    on: LogNormalTime
    off: LogNormalTime
    gap: LogNormalTime


class Batch(Strict):
    kind: Literal["batch"] = "batch"
    count: PositiveInt = 1


Arrivals = Annotated[Poisson | Profile | OnOff | Batch, Field(discriminator="kind")]


class SizeRange(Strict):
    """Sizes uniform in [min, max] (min = max: every flow the same size)."""

    min: Size
    max: Size

    @model_validator(mode="after")
    def _ordered(self) -> SizeRange:
        if units.size_bytes(self.max) < units.size_bytes(self.min):
            raise ValueError(f"max ({self.max}) must not be below min ({self.min})")
        return self

    def distribution(self) -> SizeDistribution:
        lo, hi = units.size_bytes(self.min), units.size_bytes(self.max)
        return SizeDistribution(f"{self.min}-{self.max}", f"{lo} 0\n{hi} 1\n", 1.0)


def _pattern_spec(pattern: Pattern) -> dict:
    if not isinstance(pattern, str):
        return pattern.model_dump()
    if pattern not in get_args(SimplePattern):
        raise ValueError(
            f"pattern {excerpt(str(pattern))} is not one of {', '.join(get_args(SimplePattern))}; "
            "stride, incast and one_to_many take their fields (e.g. Stride(stride=4))"
        )
    return {"kind": pattern}


def _arrivals_spec(arrivals: Poisson | Profile | OnOff | Batch) -> dict:
    if isinstance(arrivals, OnOff):
        return {
            "kind": "on_off",
            **{
                name: (units.time_ps(part.mean), float(part.sigma))
                for name, part in (
                    ("on", arrivals.on),
                    ("off", arrivals.off),
                    ("gap", arrivals.gap),
                )
            },
        }
    return arrivals.model_dump()


def generate_flows(
    topology: Topology,
    *,
    pattern: Pattern,
    arrivals: Poisson | Profile | OnOff | Batch,
    sizes: str | SizeRange = "websearch",
    start: int | str = 0,
    stop: int | str,
    seed: int = 1,
    stream: int = 0,
    base: Path = Path("."),
) -> dict[str, np.ndarray]:
    """The flows as columns src, dst, size_bytes, start_ps, in start order. `stream`
    separates workloads of one run (scenario traffic blocks use their index)."""
    dist = sizes.distribution() if isinstance(sizes, SizeRange) else size_distribution(sizes, base)
    spec = {
        "pattern": _pattern_spec(pattern),
        "arrivals": _arrivals_spec(arrivals),
        "cdf_text": dist.text,
        "unit_bytes": dist.unit_bytes,
        "start": units.time_ps(start),
        "stop": units.time_ps(stop),
    }
    return _core.flow_workload(topology._core, spec, seed, stream)
