"""Queueing disciplines of switch ports, as scenario files and the Python API give them:
a scheduler (which packet goes next) and an AQM (which packets to drop or mark), with
every quantity in units. `queue_config` turns them into the engine's form.

The model of each is documented in the engine (`crates/isthmus-core/src/queue/`).
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, TypeAdapter

from isthmus import arguments, declared
from isthmus.arguments import checked
from isthmus.fields import QueueLimit, Strict

_QUEUE = declared.parameters("QueueConfig")
MAX_DEVICE_QUEUE: int = _QUEUE["device_queue"].bounds()["le"]
DeviceQueue = Annotated[int, Field(ge=0, le=MAX_DEVICE_QUEUE)]
# Each engine-wide queue's default limit as a user writes it ("250pkts").
DEFAULT_LIMITS: dict[str, str] = {
    which: declared.UNITS["limit"].to_user(
        declared.parameters("EngineConfig")[which].default["limit"]
    )
    for which in ("host_queue", "switch_queue")
}
MAX_CLASSES: int = declared.parameters("SchedulerConfig", "strict_priority")["classes"].bounds()[
    "le"
]


def _declared(type_name: str, kind: str, name: str) -> type[declared.DeclaredModel]:
    return declared.model(type_name, kind, name=name, module=__name__)


# The schedulers and AQMs as the engine declares them (crates/isthmus-core/src/queue/):
# every field's meaning, unit, default and range come from there.
Fifo = _declared("SchedulerConfig", "fifo", "Fifo")
StrictPriority = _declared("SchedulerConfig", "strict_priority", "StrictPriority")
Drr = _declared("SchedulerConfig", "drr", "Drr")
Wfq = _declared("SchedulerConfig", "wfq", "Wfq")
Fq = _declared("SchedulerConfig", "fq", "Fq")
Pifo = _declared("SchedulerConfig", "pifo", "Pifo")
DropTail = _declared("AqmConfig", "drop_tail", "DropTail")
Red = _declared("AqmConfig", "red", "Red")
Ramp = _declared("AqmConfig", "ramp", "Ramp")
CoDel = _declared("AqmConfig", "codel", "CoDel")
Pie = _declared("AqmConfig", "pie", "Pie")


class Step(Strict):
    """Mark every ECN-capable packet when more than k wait (DCTCP's marker): the ramp
    with kmin = kmax = k and pmax 1."""

    kind: Literal["step"] = "step"
    k: QueueLimit

    def engine(self) -> dict:
        return Ramp(kmin=self.k, kmax=self.k, pmax=1.0).engine()


Scheduler = Annotated[Fifo | StrictPriority | Drr | Wfq | Fq | Pifo, Field(discriminator="kind")]
Aqm = Annotated[DropTail | Red | Ramp | Step | CoDel | Pie, Field(discriminator="kind")]


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
    return checked(Ramp, "ECN marking", kind="ramp", kmin=kmin, kmax=kmax, pmax=pmax).engine()


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
        "scheduler": _model(scheduler or Fifo(), _SCHEDULERS, scheduler_name).engine(),
        "aqm": _model(aqm or DropTail(), _AQMS, aqm_name).engine(),
        "device_queue": device_queue,
    }
