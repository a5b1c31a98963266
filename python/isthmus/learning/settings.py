"""The settings of a group of Double-DQN learners (`isthmus.learning.ddqn`), each with the
values it accepts. Kept apart from the learners so that declaring them (an ACC agent's
`settings` parameter, a scenario file's table) does not import PyTorch."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from isthmus.arguments import checked, shown
from isthmus.fields import Strict

# A learner's replay memory holds this many transitions at most.
MAX_CAPACITY = 1_000_000
# Units in each hidden layer at most (ACC's are tens).
MAX_HIDDEN = 4096


class DqnSettings(Strict):
    """hidden: units per hidden layer; gamma: discount; learning_rate: Adam's step;
    batch: transitions per training step; capacity: transitions a learner's memory
    keeps; target_every: training steps between target-network copies; epsilon:
    exploration from `epsilon_start`, times `epsilon_decay` each step, down to
    `epsilon_min`."""

    hidden: Annotated[int, Field(ge=1, le=MAX_HIDDEN)] = 64
    gamma: Annotated[float, Field(ge=0, le=1)] = 0.9
    learning_rate: Annotated[float, Field(gt=0, le=1)] = 1e-3
    batch: Annotated[int, Field(ge=1, le=MAX_CAPACITY)] = 32
    capacity: Annotated[int, Field(ge=1, le=MAX_CAPACITY)] = 2000
    target_every: Annotated[int, Field(ge=1, lt=2**31)] = 100
    epsilon_start: Annotated[float, Field(ge=0, le=1)] = 1.0
    epsilon_min: Annotated[float, Field(ge=0, le=1)] = 0.02
    epsilon_decay: Annotated[float, Field(gt=0, le=1)] = 0.995

    @model_validator(mode="after")
    def _batch_fits(self) -> DqnSettings:
        if self.batch > self.capacity:
            raise ValueError(
                f"batch ({self.batch}) is more transitions than the memory keeps "
                f"(capacity {self.capacity})"
            )
        return self


def dqn_settings(given: object) -> DqnSettings:
    """Learner settings given as `DqnSettings`, as a dict of its fields (a scenario
    file's table), or None for the defaults."""
    if given is None:
        return DqnSettings()
    if isinstance(given, DqnSettings):
        return given
    if isinstance(given, dict):
        return checked(DqnSettings.model_validate, "settings", given)
    raise ValueError(f"settings must be a DqnSettings or a dict of its fields, got {shown(given)}")
