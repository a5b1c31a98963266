"""Control programs by name, one module each: the baselines (`ecmp`, `single_path`,
`hedera`, `l2_learning`) and the schemes (`ofpt`, `ibcn`, `diolkos`, `acc`). Scenario
files name them in `[[control.apps]]`; `app_class` finds one and `check_parameters`
holds a scenario's parameters to what its constructor declares (see
`isthmus.control.apps.parameters`)."""

from __future__ import annotations

from typing import Any

from isthmus.control.apps.acc import Acc
from isthmus.control.apps.diolkos import Diolkos
from isthmus.control.apps.ecmp import Ecmp
from isthmus.control.apps.hedera import Hedera
from isthmus.control.apps.ibcn import Ibcn
from isthmus.control.apps.l2_learning import L2Learning
from isthmus.control.apps.ofpt import Ofpt
from isthmus.control.apps.parameters import check, declaration, parameter_model
from isthmus.control.apps.single_path import SinglePath
from isthmus.control.plane import Controller, SwitchAgent
from isthmus.registry import Registry

APPS: Registry[type[Controller] | type[SwitchAgent]] = Registry(
    "control app",
    {
        "acc": Acc,
        "diolkos": Diolkos,
        "ecmp": Ecmp,
        "hedera": Hedera,
        "ibcn": Ibcn,
        "l2_learning": L2Learning,
        "ofpt": Ofpt,
        "single_path": SinglePath,
    },
)
"""Every control app by the name scenario files give it; a new app joins with
`APPS.register(name, cls)` and passes `check_app`."""


def app_class(name: str) -> type[Controller] | type[SwitchAgent]:
    return APPS.lookup(name)


def app_parameters(name: str) -> list[str]:
    """The keyword parameters app `name` takes (an agent's handle excluded)."""
    return list(parameter_model(declaration(app_class(name))).model_fields)


def check_parameters(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` checked against app `name`'s declared parameters (names, types and
    ranges), before anything is built; returns the values to construct it with."""
    return check(name, declaration(app_class(name)), params)


def check_app(name: str) -> None:
    """Raises naming what registered app `name` gets wrong: it must be a Controller or
    a SwitchAgent whose constructor declares its parameters with `checked` (types and
    ranges a scenario file is held to), each with a default, so a scenario may name
    the app alone. A new app passes this before a scenario uses it."""
    cls = app_class(name)
    if not (isinstance(cls, type) and issubclass(cls, Controller | SwitchAgent)):
        raise ValueError(f"control app '{name}' must be a Controller or SwitchAgent subclass")
    if cls.__init__ not in (Controller.__init__, SwitchAgent.__init__) and not hasattr(
        cls.__init__, "declared"
    ):
        raise ValueError(
            f"control app '{name}': decorate its __init__ with "
            "isthmus.control.apps.parameters.checked, so its parameters are checked"
        )
    fields = parameter_model(declaration(cls)).model_fields
    required = [field for field, info in fields.items() if info.is_required()]
    if required:
        raise ValueError(
            f"control app '{name}': give its parameters defaults ({', '.join(required)})"
        )


def is_agent(name: str) -> bool:
    return issubclass(app_class(name), SwitchAgent)


__all__ = ["APPS", "app_class", "app_parameters", "check_app", "check_parameters", "is_agent"]
