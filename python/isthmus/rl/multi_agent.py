"""`EcnQueuesEnv`: a PettingZoo parallel environment with one agent per switch egress
queue, each choosing its queue's ECN template every control interval (ACC's setting,
the multi-agent form of `EcnThresholdEnv`).

1. `reset(seed)` builds the simulation with that seed (or one drawn from the
   environment's generator) and observes every queue at time 0.
2. `step(actions)` gives each agent's queue the ECN template its action indexes
   (`isthmus.learning.ecn_queues.templates` for its link rate; a changed template is one
   per-class ECN command, packets stay queued), runs one `interval`, and returns every
   agent's observation and reward as `isthmus.learning.ecn_queues.QueueObserver` computes
   them (the same code the ACC switch agent runs).
3. Agents terminate when every flow has finished and are truncated at `episode`; then
   the episode is over (no agents left).

Agent names are "switch:port:class". Each agent sees only its own queue's counters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from isthmus import arguments
from isthmus.control import ControlPlane, SwitchAgent
from isthmus.learning.ecn_queues import (
    COUNTERS,
    FEATURES,
    IDENTITY_FEATURES,
    NUM_TEMPLATES,
    QueueObserver,
    queue_ref_bytes,
    templates,
)
from isthmus.simulation import Simulation


class EcnQueuesEnv(ParallelEnv):
    metadata = {"name": "isthmus_ecn_queues_v0", "render_modes": []}

    def __init__(
        self,
        build: Callable[[int], Simulation],
        *,
        interval: int | str = "100us",
        episode: int | str = "5ms",
        classes: tuple[int, ...] = (0,),
        history: int = 3,
        beta: float = 0.5,
    ):
        """`build(seed)` returns a fresh simulation with its traffic added."""
        self.build = arguments.callable_argument(build, "build")
        self.interval = arguments.duration(interval, "interval")
        self.episode = arguments.duration(episode, "episode")
        if self.interval <= 0 or self.episode < self.interval:
            raise ValueError("interval must be positive and episode at least one interval")
        self.classes = tuple(arguments.whole_list(classes, "classes", 0, 255, "a traffic class"))
        self.history, self.beta = history, beta
        probe = build(0)
        queues = probe.queues()
        nodes = probe.topology.nodes()
        ports = probe.ports()
        switches = {i for i, kind in enumerate(nodes["kind"]) if kind == "switch"}
        node_of_port = ports["node"]
        rows = [
            i
            for i in range(len(queues["class"]))
            if int(node_of_port[queues["port_index"][i]]) in switches
            and int(queues["class"][i]) in self.classes
        ]
        if not rows:
            raise ValueError(f"no switch queue has a class in {self.classes}")
        self._rows = np.array(rows)
        self._port = queues["port_index"][self._rows].astype(int)
        self._class = queues["class"][self._rows].astype(int)
        self._node = node_of_port[self._port].astype(int)
        first_port = {int(n): int(np.flatnonzero(node_of_port == n)[0]) for n in switches}
        self._local = np.array(
            [p - first_port[n] for p, n in zip(self._port, self._node, strict=True)]
        )
        self._rates = ports["rate_bps"][self._port].astype(np.float64)
        self._templates = [templates(r) for r in self._rates]
        names = nodes["name"]
        self.possible_agents = [
            f"{names[n]}:{p}:{c}"
            for n, p, c in zip(self._node, self._local, self._class, strict=True)
        ]
        self.agents: list[str] = []
        state_dim = history * FEATURES + IDENTITY_FEATURES
        self._observation_space = gym.spaces.Box(0.0, 4.0, shape=(state_dim,), dtype=np.float32)
        self._action_space = gym.spaces.Discrete(NUM_TEMPLATES)
        self._rng = np.random.default_rng()
        self.sim: Simulation | None = None

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        run_seed = int(self._rng.integers(2**31))
        self.sim = self.build(run_seed)
        self._plane = ControlPlane(self.sim)
        handles = self._plane.add_agents(SwitchAgent)
        self._handles = {h.switch.name: h.switch for h in handles}
        self._plane.run(self.sim.now)
        self.observer = QueueObserver(
            self._rates,
            queue_ref_bytes(self._rates),
            history=self.history,
            beta=self.beta,
            classes=self._class,
        )
        self._template = np.full(len(self._rows), -1)
        self.agents = list(self.possible_agents)
        states, _, _ = self.observer.observe(self._counters(), 0, np.zeros(len(self._rows)))
        observations = self._by_agent(states)
        return observations, {a: {"seed": run_seed} for a in self.agents}

    def _counters(self) -> dict[str, np.ndarray]:
        q = self.sim.queues()
        return {k: q[k][self._rows] for k in COUNTERS}

    def _by_agent(self, values: np.ndarray) -> dict[str, Any]:
        return {a: values[i] for i, a in enumerate(self.possible_agents) if a in self.agents}

    def step(self, actions: dict[str, int]):
        if self.sim is None or not self.agents:
            raise RuntimeError("call reset() before step(), and again after an episode ends")
        index = {a: i for i, a in enumerate(self.possible_agents)}
        names = self.sim.topology.nodes()["name"]
        for agent, action in actions.items():
            if agent not in index:
                raise ValueError(f"unknown agent {agent!r}")
            if not self._action_space.contains(int(action)):
                raise ValueError(
                    f"agent {agent}'s action {action} is outside 0..{NUM_TEMPLATES - 1}"
                )
            i = index[agent]
            if self._template[i] == int(action):
                continue
            self._template[i] = int(action)
            kmin, kmax, pmax = self._templates[i][int(action)]
            self._handles[names[self._node[i]]].set_ecn(
                int(self._local[i]), f"{kmin}B", f"{kmax}B", pmax, traffic_class=int(self._class[i])
            )
        self._plane.run(self.sim.now + self.interval)
        states, rewards, _ = self.observer.observe(
            self._counters(), self.interval, np.maximum(self._template, 0)
        )
        observations = self._by_agent(states)
        reward_of = self._by_agent(rewards.astype(float))
        finished = bool(self.sim.num_flows > 0 and self.sim.unfinished_flows == 0)
        out_of_time = self.sim.now >= self.episode
        terminations = {a: finished for a in self.agents}
        truncations = {a: out_of_time and not finished for a in self.agents}
        infos = {a: {"time_ps": self.sim.now} for a in self.agents}
        reward_of = {a: float(r) for a, r in reward_of.items()}
        if finished or out_of_time:
            self.agents = []
        return observations, reward_of, terminations, truncations, infos
