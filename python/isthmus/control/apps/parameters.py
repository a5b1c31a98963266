"""What control apps take, declared once: each app's constructor annotates its
parameters with the types below (a duration, an entry priority, a count with its
bounds), so its signature says both what a parameter is and what values it accepts.

`check` holds a table of parameters (a scenario file's `[[control.apps]]`) against
that signature before anything is built or run; `checked`, on the constructor, holds
Python callers to the same. A wrong type, an out-of-range value or an unknown name is
one ValueError naming the parameter.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, create_model
from pydantic.fields import FieldInfo

from isthmus import arguments
from isthmus.arguments import MAX_MESSAGE_CHARS, U16


def _duration(value: int | str) -> int | str:
    arguments.duration(value, "")
    return value


def _positive_duration(value: int | str) -> int | str:
    if arguments.duration(value, "") == 0:
        raise ValueError("must be a positive duration")
    return value


def _size(value: int | str) -> int | str:
    arguments.size(value, "")
    return value


# A time: "5ms" or an integer count of picoseconds (one check of both forms, so a
# wrong value gets one message).
Duration = Annotated[int | str, PlainValidator(_duration)]
# A time that must pass: a period, an interval, a timeout.
Period = Annotated[int | str, PlainValidator(_positive_duration)]
# A size: "100KB" or an integer count of bytes.
Bytes = Annotated[int | str, PlainValidator(_size)]
# A flow entry's priority (the engine keeps 16 bits).
Priority = Annotated[int, Field(ge=0, le=U16)]
# A fraction of something, 0 to 1.
Fraction = Annotated[float, Field(ge=0, le=1)]
# A random seed.
Seed = Annotated[int, Field(ge=0, lt=2**64)]
# A traffic class (a packet's priority field holds 8 bits).
TrafficClass = Annotated[int, Field(ge=0, le=255)]
# Time steps a forecaster reads or predicts (a window, a lead, a horizon, a moving
# average): each is a row of every series it models, in memory and in every pass.
MAX_STEPS = 10_000
Steps = Annotated[int, Field(ge=1, le=MAX_STEPS)]
# Rows of telemetry an app gathers before or between trainings, or keeps.
MAX_ROWS = 10_000_000
Rows = Annotated[int, Field(ge=0, le=MAX_ROWS)]

# Parameters that are not the app's to be given: the instance, and an agent's handle.
_BOUND = ("self", "switch")


@functools.cache
def parameter_model(init: Callable[..., None]) -> type[BaseModel]:
    """A model of the keyword parameters `init` declares (types, ranges, defaults)."""
    hints = typing.get_type_hints(init, include_extras=True)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(init).parameters.items():
        if name in _BOUND or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    # Strict: "1" is not a count and 2.0 is not one either (a float parameter takes an
    # integer); a forecaster or a callable is checked by its type.
    config = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True)
    return create_model(f"{init.__qualname__}.parameters", __config__=config, **fields)


class ParameterError(ValueError):
    """A parameter app `app` does not take, or a value it does not accept."""

    def __init__(self, app: str, message: str):
        super().__init__(message)
        self.app = app


def check(app: str, init: Callable[..., None], given: dict[str, Any]) -> dict[str, Any]:
    """`given` checked against what `init` declares; returns the values to construct
    with (a table given for a settings model becomes that model)."""
    model = parameter_model(init)
    unknown = sorted(set(given) - set(model.model_fields))
    if unknown:
        takes = ", ".join(model.model_fields) or "no parameters"
        raise ParameterError(
            app, f"app {app!r} has no parameter(s) {', '.join(unknown)}; it takes {takes}"
        )
    # NumPy's scalars stand for Python's (a count computed with NumPy is still a count).
    plain = {k: v.item() if isinstance(v, np.generic) else v for k, v in given.items()}
    try:
        parsed = model.model_validate(plain)
    except ValidationError as e:
        raise ParameterError(app, "; ".join(_problem(model, p) for p in e.errors())) from None
    return {name: getattr(parsed, name) for name in given}


def _problem(model: type[BaseModel], problem: Any) -> str:
    """One of a validation's problems, worded from the parameter's declaration."""
    where = ".".join(str(part) for part in problem["loc"])
    message = problem["msg"].removeprefix("Value error, ")
    if len(message) > MAX_MESSAGE_CHARS:  # a long bad value, quoted in full
        message = message[:MAX_MESSAGE_CHARS] + "..."
    got = arguments.shown(problem["input"])
    if problem["type"] in _RANGE_ERRORS and len(problem["loc"]) == 1:
        return f"{where} must be {_range(model.model_fields[where])}, got {got}"
    if problem["type"] in _RANGE_ERRORS:  # an item of a list, a field of a table
        (bound,) = problem["ctx"].values()
        return f"{where} must be {_RANGE_ERRORS[problem['type']]} {_number(bound)}, got {got}"
    if problem["type"] == "extra_forbidden" and len(problem["loc"]) > 1:
        return f"{'.'.join(map(str, problem['loc'][:-1]))} has no field {problem['loc'][-1]!r}"
    if problem["type"] == "literal_error":
        return f"{where} must be {problem['ctx']['expected']}, got {got}"
    if message.startswith("must "):  # one of the validators above
        return f"{where} {message}, got {got}"
    return f"{where}: {message}, got {got}"


_RANGE_ERRORS = {
    "greater_than": "above",
    "greater_than_equal": "at least",
    "less_than": "below",
    "less_than_equal": "at most",
}


def _range(field: FieldInfo) -> str:
    """The values a number parameter accepts, from its declared bounds: "in [0, 1)",
    "a positive integer", "an integer of at least 3"."""
    bounds = list(field.metadata)
    annotation = field.annotation
    for member in typing.get_args(annotation):  # within an optional's Annotated
        if typing.get_origin(member) is Annotated:
            annotation = typing.get_args(member)[0]
            bounds += [b for meta in member.__metadata__ for b in getattr(meta, "metadata", [meta])]
    low = high = None
    for bound in bounds:
        for name in ("gt", "ge", "lt", "le"):
            value = getattr(bound, name, None)
            if value is not None and name in ("gt", "ge"):
                low = (name, value)
            elif value is not None:
                high = (name, value)
    if annotation is int and low is not None and high is None:
        least = low[1] + 1 if low[0] == "gt" else low[1]
        return "a positive integer" if least == 1 else f"an integer of at least {least}"
    left = "" if low is None else ("(" if low[0] == "gt" else "[") + _number(low[1])
    right = "" if high is None else _number(high[1]) + (")" if high[0] == "lt" else "]")
    kind = "an integer " if annotation is int else ""
    if left and right:
        return f"{kind}in {left}, {right}"
    if left:
        return ("above " if low[0] == "gt" else "at least ") + _number(low[1])
    return ("below " if high[0] == "lt" else "at most ") + _number(high[1])


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def checked(init: Callable[..., None]) -> Callable[..., None]:
    """Checks an app constructor's arguments against its own declaration before it
    runs (see `check`)."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def construct(self: object, *args: Any, **kwargs: Any) -> None:
        unknown = {k: v for k, v in kwargs.items() if k not in signature.parameters}
        if unknown:  # refused by name, with what the app takes
            check(type(self).__name__, init, unknown)
        bound = signature.bind(self, *args, **kwargs)
        given = {k: v for k, v in bound.arguments.items() if k not in _BOUND}
        values = check(type(self).__name__, init, given)
        bound.arguments.update(values)
        init(*bound.args, **bound.kwargs)

    construct.declared = init  # type: ignore[attr-defined]
    return construct


def declaration(app_type: type) -> Callable[..., None]:
    """The constructor whose signature declares `app_type`'s parameters."""
    init = app_type.__init__
    return getattr(init, "declared", init)
