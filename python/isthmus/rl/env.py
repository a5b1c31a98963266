"""`EcnThresholdEnv`: a Gymnasium environment in which one agent sets every switch's
ECN marking threshold, one control interval at a time.

1. `reset(seed)` builds the scenario's simulation with that seed (or one drawn from the
   environment's generator) and observes it at time 0.
2. `step(action)` applies the thresholds (`action[i]` indexes `thresholds` for the i-th
   switch, to all its ports), runs one `interval`, and observes every switch egress
   port: its queue as a fraction of the queue limit, and its link utilization over the
   interval.
3. The reward is the mean utilization minus `queue_weight` times the mean queue
   fraction: throughput against queueing delay, the trade-off ECN tuning steers.
4. The episode terminates when every flow has finished and is truncated at `episode`
   of simulated time (a time limit, not an end state of the task).

The thresholds are commands of a `Controller` on a `ControlPlane`, so they take effect
as any controller's do (after the plane's control latency, 0 here).

Observations are per port and actions per switch, the layout per-switch agents (ACC)
slice up; this single-agent form is the base a multi-agent one wraps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from isthmus import arguments, units
from isthmus.control import Controller, ControlPlane
from isthmus.scenario import Scenario, load_scenario, resolve_scenario
from isthmus.simulation import Simulation

FULL_PACKET_BYTES = 1500


class EcnThresholdEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: Scenario | str | Path = "leafspine-websearch-small",
        *,
        interval: int | str = "100us",
        thresholds: tuple[str, ...] = ("10pkts", "20pkts", "65pkts", "150pkts"),
        episode: int | str = "20ms",
        queue_weight: float = 1.0,
    ):
        if isinstance(scenario, Scenario):
            self.scenario, self.base = scenario, Path(".")
        else:
            path = resolve_scenario(str(scenario))
            self.scenario, self.base = load_scenario(path), path.parent
        self.interval = arguments.duration(interval, "interval")
        if self.interval == 0:
            raise ValueError("interval must be greater than zero")
        if (
            isinstance(thresholds, str)
            or not isinstance(thresholds, tuple | list)
            or not thresholds
        ):
            raise ValueError(
                "thresholds must be a list of queue limits, at least one (e.g. ['20pkts']), "
                f"got {arguments.shown(thresholds)}"
            )
        for i, t in enumerate(thresholds):
            arguments.queue_limit(t, f"thresholds[{i}]")
        self.thresholds = list(thresholds)
        self.episode = arguments.duration(episode, "episode")
        self.queue_weight = arguments.number(queue_weight, "queue_weight", low=0)
        probe = self.scenario.build(base=self.base)
        nodes = probe.topology.nodes()
        ports = probe.ports()
        self._switches = [i for i, kind in enumerate(nodes["kind"]) if kind == "switch"]
        self._switch_ports = np.flatnonzero(np.isin(ports["node"], self._switches))
        self._rates = ports["rate_bps"][self._switch_ports]
        kind, value = units.limit(self.scenario.network.switch_queue)
        self._queue_limit = value if kind == "packets" else max(1, value // FULL_PACKET_BYTES)
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, shape=(len(self._switch_ports), 2), dtype=np.float32
        )
        self.action_space = gym.spaces.MultiDiscrete([len(self.thresholds)] * len(self._switches))
        self.sim: Simulation | None = None
        self._controller = Controller()
        self._busy = np.zeros(len(self._switch_ports))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        run_seed = int(self.np_random.integers(2**31))
        self.sim = self.scenario.build(seed=run_seed, base=self.base)
        self._plane = ControlPlane(self.sim)
        self._controller = self._plane.add(Controller())
        self._busy = np.zeros(len(self._switch_ports))
        observation, _ = self._observe(elapsed=0)
        return observation, {"time_ps": 0, "seed": run_seed}

    def step(self, action):
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action)
        if not self.action_space.contains(action):
            raise ValueError(f"action {action} is outside {self.action_space}")
        for switch, choice in zip(self._switches, action.tolist(), strict=True):
            self._controller.set_ecn_threshold(switch, self.thresholds[choice])
        start = self.sim.now
        self._plane.run(start + self.interval)
        observation, utilization = self._observe(elapsed=self.interval)
        reward = float(utilization.mean() - self.queue_weight * observation[:, 0].mean())
        terminated = bool(self.sim.num_flows > 0 and self.sim.unfinished_flows == 0)
        truncated = bool(not terminated and self.sim.now >= self.episode)
        info = {"time_ps": self.sim.now, "ecn_marks": int(self.sim.ports()["ecn_marks"].sum())}
        return observation, reward, terminated, truncated, info

    def _observe(self, elapsed: int) -> tuple[np.ndarray, np.ndarray]:
        ports = self.sim.ports()
        queue = np.minimum(ports["queue_packets"][self._switch_ports] / self._queue_limit, 1.0)
        busy = ports["busy_ps"][self._switch_ports].astype(np.float64)
        utilization = (
            np.clip((busy - self._busy) / elapsed, 0.0, 1.0) if elapsed else np.zeros_like(busy)
        )
        self._busy = busy
        observation = np.stack([queue, utilization], axis=1).astype(np.float32)
        return observation, utilization
