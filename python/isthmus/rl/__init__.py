"""Reinforcement-learning environments over the control seam: each `step()` is one
control interval of the simulation."""

import gymnasium

from isthmus.rl.env import EcnThresholdEnv

ENV_IDS = {"isthmus/EcnThreshold-v0": "isthmus.rl.env:EcnThresholdEnv"}
"""Gymnasium ids: `gymnasium.make("isthmus/EcnThreshold-v0")` after `import isthmus.rl`."""

for _id, _entry in ENV_IDS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry)

__all__ = ["ENV_IDS", "EcnThresholdEnv"]
