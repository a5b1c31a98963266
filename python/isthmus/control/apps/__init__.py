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

APPS: dict[str, type[Controller] | type[SwitchAgent]] = {
    "ecmp": Ecmp,
    "single_path": SinglePath,
    "hedera": Hedera,
    "ibcn": Ibcn,
    "l2_learning": L2Learning,
    "ofpt": Ofpt,
    "diolkos": Diolkos,
    "acc": Acc,
}


def app_class(name: str) -> type[Controller] | type[SwitchAgent]:
    if name not in APPS:
        raise ValueError(f"unknown control app {name!r}; known: {', '.join(sorted(APPS))}")
    return APPS[name]


def app_parameters(name: str) -> list[str]:
    """The keyword parameters app `name` takes (an agent's handle excluded)."""
    return list(parameter_model(declaration(app_class(name))).model_fields)


def check_parameters(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` checked against app `name`'s declared parameters (names, types and
    ranges), before anything is built; returns the values to construct it with."""
    return check(name, declaration(app_class(name)), params)


def is_agent(name: str) -> bool:
    return issubclass(app_class(name), SwitchAgent)


__all__ = ["APPS", "app_class", "app_parameters", "check_parameters", "is_agent"]
