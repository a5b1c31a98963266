"""Reinforcement-learning environments over the control seam: each `step()` is one
control interval of the simulation."""

from isthmus.rl.env import EcnThresholdEnv

__all__ = ["EcnThresholdEnv"]
