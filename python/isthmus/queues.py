"""Queueing disciplines of switch ports, as scenario files and the Python API give them:
a scheduler (which packet goes next) and an AQM (which packets to drop or mark), with
every quantity in units. `queue_config` turns them into the engine's form.

The model of each is documented in the engine (`crates/isthmus-core/src/queue/`).
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, TypeAdapter, model_validator

from isthmus import arguments, defaults, units
from isthmus.arguments import checked
from isthmus.fields import PositiveInt, QueueLimit, Size, Strict, Time

# Traffic classes a port's scheduler may serve: the engine keeps per-class counters (and
# deficits, finish times, AQMs) on every port, so a class costs memory on all of them.
MAX_CLASSES = 64
# Packets a device FIFO below a port's discipline may hold (ns-3's point-to-point: 100).
MAX_DEVICE_QUEUE = 1_000_000
DeviceQueue = Annotated[int, Field(ge=0, le=MAX_DEVICE_QUEUE)]


class Fifo(Strict):
    kind: Literal["fifo"] = "fifo"


class StrictPriority(Strict):
    """One queue per class (the packet's priority field); class 0 is served first."""

    kind: Literal["strict_priority"]
    classes: Annotated[int, Field(gt=0, le=MAX_CLASSES)]


class Drr(Strict):
    """Deficit round robin: each class may send `quanta[c]` bytes per round."""

    kind: Literal["drr"]
    quanta: Annotated[list[Size], Field(min_length=1, max_length=MAX_CLASSES)]


class Wfq(Strict):
    """Weighted fair queueing (self-clocked): class c gets weights[c] / sum of shares."""

    kind: Literal["wfq"]
    weights: Annotated[list[PositiveInt], Field(min_length=1, max_length=MAX_CLASSES)]


class Fq(Strict):
    """A queue per flow, each with its own AQM, served round robin (RFC 8290)."""

    kind: Literal["fq"]
    quantum: Size = "1514B"


class Pifo(Strict):
    """Push-in first-out by rank: arrival (FIFO), remaining_size (SRPT), start_time
    (start-time fair queueing) or deadline (creation time + budgets[class])."""

    kind: Literal["pifo"]
    rank: Literal["arrival", "remaining_size", "start_time", "deadline"]
    budgets: Annotated[list[Time], Field(max_length=MAX_CLASSES)] = []

    @model_validator(mode="after")
    def _budgets(self) -> Pifo:
        if (self.rank == "deadline") != bool(self.budgets):
            raise ValueError("budgets go with rank 'deadline' only, one per class")
        return self


Scheduler = Annotated[Fifo | StrictPriority | Drr | Wfq | Fq | Pifo, Field(discriminator="kind")]


class DropTail(Strict):
    kind: Literal["drop_tail"] = "drop_tail"


class Red(Strict):
    """RED (Floyd & Jacobson 1993) on an EWMA of the queue."""

    kind: Literal["red"]
    min: QueueLimit
    max: QueueLimit
    max_p: Annotated[float, Field(gt=0, le=1)] = defaults.number("red", "max_p")
    weight: Annotated[float, Field(gt=0, le=1)] = defaults.number("red", "weight")
    gentle: bool = False
    ecn: bool = False
    # ns-3's UseHardDrop: above max (2 max when gentle) drop ECN-capable packets too.
    hard_drop: bool = True
    # ns-3's Wait: space marks and drops out, none until count x p_b reaches 1.
    wait: bool = False


class Ramp(Strict):
    """Marking probability rising from 0 at kmin to pmax at kmax on the instantaneous
    queue, 1 above (DCQCN's marker)."""

    kind: Literal["ramp"]
    kmin: QueueLimit
    kmax: QueueLimit
    pmax: Annotated[float, Field(gt=0, le=1)] = 1.0


class Step(Strict):
    """Mark every ECN-capable packet when more than k wait (DCTCP's marker)."""

    kind: Literal["step"]
    k: QueueLimit


class CoDel(Strict):
    """CoDel (RFC 8289)."""

    kind: Literal["codel"]
    target: Time = defaults.duration("codel", "target")
    interval: Time = defaults.duration("codel", "interval")
    ecn: bool = False


class Pie(Strict):
    """PIE (RFC 8033)."""

    kind: Literal["pie"]
    target: Time = defaults.duration("pie", "target")
    t_update: Time = defaults.duration("pie", "t_update")
    alpha: Annotated[float, Field(gt=0)] = defaults.number("pie", "alpha")
    beta: Annotated[float, Field(gt=0)] = defaults.number("pie", "beta")
    max_burst: Time = defaults.duration("pie", "max_burst")
    ecn: bool = False


Aqm = Annotated[DropTail | Red | Ramp | Step | CoDel | Pie, Field(discriminator="kind")]


def _scheduler_core(s) -> dict:
    if isinstance(s, Fifo):
        return {"kind": "fifo"}
    if isinstance(s, StrictPriority):
        return {"kind": "strict_priority", "classes": s.classes}
    if isinstance(s, Drr):
        return {"kind": "drr", "quanta": [units.size_bytes(q) for q in s.quanta]}
    if isinstance(s, Wfq):
        return {"kind": "wfq", "weights": list(s.weights)}
    if isinstance(s, Fq):
        return {"kind": "fq", "quantum": units.size_bytes(s.quantum)}
    out = {"kind": "pifo", "rank": s.rank}
    if s.rank == "deadline":
        out["budgets"] = [units.time_ps(b) for b in s.budgets]
    return out


def _aqm_core(a) -> dict:
    if isinstance(a, DropTail):
        return {"kind": "drop_tail"}
    if isinstance(a, Red):
        return {
            "kind": "red",
            "min": units.limit(a.min),
            "max": units.limit(a.max),
            "max_p": a.max_p,
            "weight": a.weight,
            "gentle": a.gentle,
            "ecn": a.ecn,
            "hard_drop": a.hard_drop,
            "wait": a.wait,
        }
    if isinstance(a, Ramp):
        return {
            "kind": "ramp",
            "kmin": units.limit(a.kmin),
            "kmax": units.limit(a.kmax),
            "pmax": a.pmax,
        }
    if isinstance(a, Step):
        k = units.limit(a.k)
        return {"kind": "ramp", "kmin": k, "kmax": k, "pmax": 1.0}
    if isinstance(a, CoDel):
        return {
            "kind": "codel",
            "target": units.time_ps(a.target),
            "interval": units.time_ps(a.interval),
            "ecn": a.ecn,
        }
    return {
        "kind": "pie",
        "target": units.time_ps(a.target),
        "t_update": units.time_ps(a.t_update),
        "alpha": a.alpha,
        "beta": a.beta,
        "max_burst": units.time_ps(a.max_burst),
        "ecn": a.ecn,
    }


# Each union's models, read off its declaration, and its validator for dicts.
_SCHEDULERS = (get_args(get_args(Scheduler)[0]), TypeAdapter(Scheduler))
_AQMS = (get_args(get_args(Aqm)[0]), TypeAdapter(Aqm))


def _model(value: object, union: tuple[tuple[type, ...], TypeAdapter], name: str) -> object:
    """A scheduler or AQM: one of the union's models, or a dict of its fields (as a
    scenario file writes it), checked into one."""
    models, adapter = union
    if isinstance(value, models):
        return value
    if not isinstance(value, dict):
        kinds = ", ".join(model.__name__ for model in models)
        raise ValueError(
            f"{name} must be one of {kinds} (isthmus.queues) or a dict of its fields, got "
            f"{arguments.shown(value)}"
        )
    return checked(adapter.validate_python, name, value)


def ramp_marker(
    kmin: str, kmax: str, pmax: float, names: tuple[str, str] = ("kmin", "kmax")
) -> dict:
    """The engine's form of a ramp marker from kmin to kmax, reaching pmax (`Ramp`);
    `names` are the caller's names for kmin and kmax, for messages."""
    for value, name in zip((kmin, kmax), names, strict=True):
        arguments.queue_limit(value, name)
    return _aqm_core(checked(Ramp, "ECN marking", kind="ramp", kmin=kmin, kmax=kmax, pmax=pmax))


def queue_config(
    limit: str,
    scheduler=None,
    aqm=None,
    device_queue: int = 0,
    *,
    names: tuple[str, str, str, str] = ("limit", "scheduler", "aqm", "device_queue"),
) -> dict:
    """The engine's form of a port's queueing: a limit ("250pkts", "300KB"), a scheduler
    model (default FIFO), an AQM model (default drop-tail), and the packets a device FIFO
    holds below them (ns-3's point-to-point keeps 100; default none). `names` are the
    caller's names for the four, for messages."""
    limit_name, scheduler_name, aqm_name, device_name = names
    device_queue = arguments.whole(
        device_queue, device_name, 0, MAX_DEVICE_QUEUE, "packets of a device FIFO"
    )
    return {
        "limit": arguments.queue_limit(limit, limit_name),
        "scheduler": _scheduler_core(_model(scheduler or Fifo(), _SCHEDULERS, scheduler_name)),
        "aqm": _aqm_core(_model(aqm or DropTail(), _AQMS, aqm_name)),
        "device_queue": device_queue,
    }
