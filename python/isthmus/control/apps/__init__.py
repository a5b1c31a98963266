"""Control programs by name, one module each: the baselines (`ecmp`, `single_path`,
`hedera`, `l2_learning`) and the schemes (`ofpt`, `ibcn`, `diolkos`, `acc`). Scenario
files name them in `[[control.apps]]`; `app_class` finds one and `make_app` builds it
from a scenario's parameters, refusing parameters the program does not take."""

from __future__ import annotations

import inspect
from typing import Any

from isthmus.control.apps.acc import Acc
from isthmus.control.apps.diolkos import Diolkos
from isthmus.control.apps.ecmp import Ecmp
from isthmus.control.apps.hedera import Hedera
from isthmus.control.apps.ibcn import Ibcn
from isthmus.control.apps.l2_learning import L2Learning
from isthmus.control.apps.ofpt import Ofpt
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
    signature = inspect.signature(app_class(name).__init__)
    skip = {"self", "switch"}
    return [p for p in signature.parameters if p not in skip]


def check_parameters(name: str, params: dict[str, Any]) -> None:
    accepted = app_parameters(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = ", ".join(accepted) if accepted else "no parameters"
        raise ValueError(f"app {name!r} has no parameter(s) {', '.join(unknown)}; it takes {takes}")


def is_agent(name: str) -> bool:
    return issubclass(app_class(name), SwitchAgent)


__all__ = ["APPS", "app_class", "app_parameters", "check_parameters", "is_agent"]
