"""ACC: every switch tunes its egress queues' ECN marking with multi-agent Double DQN
(Yan et al., "ACC: Automatic ECN Tuning for High-Speed Datacenter Networks", SIGCOMM
2021).

1. One `Acc` agent per switch, tuning its egress queues (every port, the traffic
   classes in `classes`). By default (`model="shared"`) every queue of every switch acts
   through one Q-network (`isthmus.learning.ddqn.SharedDqn`), as the paper installs one model
   on all switches: a queue's link rate and class are in its state, each queue explores
   by its own visits, all transitions go to one replay memory and the network takes one
   training step an interval for all switches. `model="per-queue"`: a learner per queue
   with its own Q-network and memory (`DoubleDqn`), stacked per switch.
2. Every `interval` (1 ms) the agent reads its own queues' counters and turns them
   into each queue's observation and reward (`isthmus.learning.ecn_queues`: the last k = 3
   intervals of mean queue length, transmit rate, marked transmit rate, marked
   fraction and current template; reward beta x utilisation + (1 - beta) x (1 -
   log2(1 + q / q_ref))). A millisecond is tens of DCQCN rate-increase periods (55
   us): a template's effect on the senders' rates shows within the interval it is
   chosen in, which at 100 us it does not (learners then chase the last choice's
   after-effects: on one bottleneck they settled 0.008-0.016 below the best template).
3. It stores each queue's transition (previous observation, template chosen, reward,
   new observation) in the replay memory (the shared one, or that queue's learner's).
4. Idle queues are skipped: a queue that sent nothing and held nothing for 3
   intervals keeps its template and is neither evaluated nor stored. Only truly idle
   ones: a queue held below Kmin by its own template, or earning a steady reward, is
   still busy, and skipping it would freeze a learner on whatever it last chose (a
   high Kmin picked while exploring, or a standing queue pinned by PFC).
5. The other queues choose a template, all at once (one batched evaluation per
   switch), epsilon-greedy (epsilon decays per visit: a queue that first congests late
   still explores then); a changed template becomes one per-class ECN command
   (`SwitchHandle.set_ecn(..., traffic_class=c)`), which leaves queued packets and
   other classes alone.
6. With `train` on, every `train_every` intervals (each, by default) the shared network
   takes one Double-DQN step on a batch of the shared memory (per queue: each learner
   on a batch of its own). Learners discount with gamma 0.5
   (`ACC_DQN`): a template's reward arrives within its interval, and a long horizon
   mostly adds the noise of later exploratory choices.
7. Per-queue learners only: every `share_every` intervals the agent pushes its
   learners' recent transitions to the global memory all agents share
   (`SwitchHandle.shared`) and pulls `pull` samples of it into each learner's memory
   (ACC's global experience replay; the shared network's memory is global already).

Offline pre-training is this same loop on training traffic; `save_models` and
`read_models` carry the learners between runs (`torch.load(weights_only=True)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field

from isthmus.control.apps.parameters import Fraction, Period, Seed, TrafficClass, checked
from isthmus.control.plane import SwitchAgent, SwitchHandle
from isthmus.learning.ecn_queues import (
    COUNTERS,
    FEATURES,
    IDENTITY_FEATURES,
    NUM_TEMPLATES,
    QueueObserver,
    queue_ref_bytes,
    templates,
)
from isthmus.learning.settings import MAX_CAPACITY, DqnSettings
from isthmus.units import time_ps

if TYPE_CHECKING:  # PyTorch is imported when an agent starts, not with the app
    from isthmus.learning.ddqn import DoubleDqn, SharedDqn

GLOBAL_MEMORY = "acc-global-memory"
SHARED_MODEL = "acc-shared-model"
"""The plane's one network in `model="shared"`, and its key in saved models."""
IDLE_INTERVALS = 3
ACC_DQN = DqnSettings(gamma=0.5)
"""Per-queue learners' settings where none are given."""
ACC_SHARED_DQN = DqnSettings(gamma=0.5, batch=256, capacity=100_000)
"""The shared network's settings where none are given: one step learns for every
queue of every switch, so it draws a larger batch from a memory of all their
transitions (about 20 ms of a 24-server fabric's busy queues at 100,000)."""
Model = Literal["shared", "per-queue"]
# Intervals an observation looks back over, at most (ACC's k is 3).
MAX_HISTORY = 64
# The replay memory of one switch's learners, in bytes.
MAX_MEMORY_BYTES = 2**30


class Acc(SwitchAgent):
    @checked
    def __init__(
        self,
        switch: SwitchHandle,
        *,
        interval: Period = "1ms",
        classes: Annotated[Sequence[TrafficClass], Field(min_length=1)] = (0,),
        train: bool = True,
        train_every: Annotated[int, Field(ge=1, lt=2**31)] = 1,
        share_every: Annotated[int, Field(ge=1, lt=2**31)] = 50,
        pull: Annotated[int, Field(ge=0, le=MAX_CAPACITY)] = 4,
        history: Annotated[int, Field(ge=1, le=MAX_HISTORY)] = 3,
        beta: Fraction = 0.5,
        initial_template: Annotated[int, Field(ge=0, lt=NUM_TEMPLATES)] | None = None,
        model: Model = "shared",
        settings: DqnSettings | None = None,
        pretrained: dict | None = None,
        seed: Seed = 0,
    ):
        super().__init__(switch)
        self.interval = time_ps(interval)
        settings = settings or (ACC_SHARED_DQN if model == "shared" else ACC_DQN)
        # Replay memory holds `capacity` transitions of two observations (4 bytes a
        # feature) each: one memory, or one per queue the agent may tune.
        memories = 1 if model == "shared" else switch.num_ports * len(set(classes))
        state_dim = history * FEATURES + IDENTITY_FEATURES
        memory = memories * settings.capacity * 2 * state_dim * 4
        if memory > MAX_MEMORY_BYTES:
            holder = (
                "the shared network"
                if model == "shared"
                else f"{memories} learners on '{switch.name}'"
            )
            raise ValueError(
                f"{holder} x settings.capacity {settings.capacity} transitions x history "
                f"{history} would hold {memory / 2**20:.0f} MiB of replay memory; at most "
                f"{MAX_MEMORY_BYTES // 2**20} MiB a switch: lower settings.capacity or history"
            )
        self.model = model
        self.classes = tuple(classes)
        self.train, self.train_every = train, train_every
        self.share_every, self.pull = share_every, pull
        self.history, self.beta = history, beta
        self.initial_template = initial_template
        self.settings = settings
        self.pretrained = pretrained
        self.seed = seed
        self.steps = 0
        self.decisions = 0
        self.skipped = 0
        self._carried: DoubleDqn | SharedDqn | None = None
        self.losses: list[float] = []
        self.rewards: list[np.ndarray] = []
        """Each interval's reward of every queue (idle ones included)."""
        self.busy: list[np.ndarray] = []
        """Each interval's mask of the queues that were not idle."""
        self.loaded: list[np.ndarray] = []
        """Each interval's mask of the queues that were loaded (`ecn_queues.LOADED`)."""

    def on_start(self) -> None:
        from isthmus.learning.ddqn import GlobalMemory

        ports = self.switch.ports()
        queues = self.switch.queues()
        wanted = np.isin(queues["class"], self.classes)
        self._rows = np.flatnonzero(wanted)
        if self._rows.size == 0:
            raise ValueError(
                f"switch '{self.switch.name}' has no queue of classes {self.classes}; "
                "its ports have classes 0.." + str(int(queues["class"].max()))
            )
        self.port = queues["port"][self._rows].astype(int)
        self.traffic_class = queues["class"][self._rows].astype(int)
        rates = ports["rate_bps"][self.port].astype(np.float64)
        self.templates = [templates(rate) for rate in rates]
        self.observer = QueueObserver(
            rates,
            queue_ref_bytes(rates),
            history=self.history,
            beta=self.beta,
            classes=self.traffic_class,
        )
        if self.model == "shared":
            self.dqn = self.switch.shared(SHARED_MODEL, self._shared_model)
            self._check_fits(None, self.dqn.state_dim, self.dqn.actions)
            self.visits = self.dqn.visits_of(self.switch.name, len(self._rows))
        else:
            carried, self._carried = self._carried, None
            if carried is not None:
                self.dqn = carried
                self._check_fits(carried.learners, carried.state_dim, carried.actions)
            else:
                switch_seed = [self.seed, *self.switch.name.encode()]
                self.dqn = self._new_learners(switch_seed)
            if self.pretrained is not None:
                self._load(self.pretrained)
            self.memory = self.switch.shared(GLOBAL_MEMORY, lambda: GlobalMemory(seed=self.seed))

        start = self.initial_template
        self.template = np.full(len(self._rows), start if start is not None else 0, dtype=int)
        self._previous: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._idle_for = np.zeros(len(self._rows), dtype=int)
        self._dequeued = self._counters()["dequeued"].copy()
        for learner in range(len(self._rows)):
            self._apply(learner)
        self.observer.observe(self._counters(), 0, self.template)
        self.every(self.interval, self.step)

    def carry_on(self, learners: DoubleDqn | SharedDqn) -> None:
        """Before the run starts: go on with `learners` (another run's `dqn`: the shared
        network, or this switch's per-queue learners on the same fabric) rather than new
        ones: weights, target networks, optimizer, replay memory and exploration carry
        over. Pre-training episodes are one training run this way, as the paper's
        offline training is. Every agent of a plane must carry on the same shared
        network."""
        self._carried = learners

    def _shared_model(self) -> SharedDqn:
        """The plane's one network: carried on, pretrained, or new (made by the first
        agent to start; the others find it)."""
        from isthmus.learning.ddqn import SharedDqn

        if self._carried is not None:
            model, self._carried = self._carried, None
            return model
        model = SharedDqn(
            self.observer.state_dim,
            NUM_TEMPLATES,
            self.settings,
            seed=int(np.random.default_rng([self.seed, 7]).integers(2**31)),
        )
        if self.pretrained is not None:
            if SHARED_MODEL not in self.pretrained:
                raise ValueError(
                    "the pretrained models are per-queue learners (by switch: "
                    f"{', '.join(sorted(self.pretrained))}); this agent uses one shared "
                    "network: give model='per-queue', or pretrain with the shared one"
                )
            state = self.pretrained[SHARED_MODEL]
            self._check_fits(None, *(int(v) for v in state["shape"][1:]))
            model.load_state_dict(state)
        return model

    def _new_learners(self, switch_seed: list[int]) -> DoubleDqn:
        from isthmus.learning.ddqn import DoubleDqn

        return DoubleDqn(
            len(self._rows),
            self.observer.state_dim,
            NUM_TEMPLATES,
            self.settings,
            seed=int(np.random.default_rng(switch_seed).integers(2**31)),
        )

    def _load(self, pretrained: dict) -> None:
        """This switch's learners from `pretrained` (see `read_models`), refused with
        what they were trained for where this switch differs."""
        name = self.switch.name
        if SHARED_MODEL in pretrained:
            raise ValueError(
                "the pretrained model is one shared network; this agent uses per-queue "
                "learners: give model='shared', or pretrain per queue"
            )
        if name not in pretrained:
            raise ValueError(
                f"the pretrained models have no learners for switch '{name}'; they have "
                f"{', '.join(sorted(pretrained))}: they come from another fabric"
            )
        state = pretrained[name]
        self._check_fits(*(int(v) for v in state["shape"]))
        self.dqn.load_state_dict(state)

    def _check_fits(self, queues: int | None, features: int, actions: int) -> None:
        """Refuses learners made for other queues (None: a shared network, made for
        any), history or templates than this agent's, naming what differs."""
        name = self.switch.name
        here = (len(self._rows), self.observer.state_dim, NUM_TEMPLATES)
        if queues is None:
            queues = here[0]
        if (queues, features, actions) == here:
            return
        differences = []
        if queues != here[0]:
            differences.append(
                f"they tune {queues} egress queues, this switch has {here[0]} ("
                f"{self.switch.num_ports} ports x classes {self.classes}): they were "
                f"trained on a fabric where '{name}' has {queues} queues"
            )
        if features != here[1]:
            differences.append(
                f"they observe {(features - IDENTITY_FEATURES) // FEATURES} intervals "
                f"(history), this agent {self.history}"
            )
        if actions != here[2]:
            differences.append(f"they choose among {actions} templates, not {here[2]}")
        raise ValueError(
            f"the pretrained learners for switch '{name}' do not fit it: "
            f"{'; '.join(differences)}; pretrain on this fabric and these settings"
        )

    @property
    def learners(self) -> int:
        """The queues this agent tunes."""
        return len(self._rows)

    @property
    def busy_intervals(self) -> int:
        """Decisions its queues have taken (intervals they were not idle), all runs of
        its learners included."""
        return int(np.sum(self.visits if self.model == "shared" else self.dqn.visits))

    def _counters(self) -> dict[str, np.ndarray]:
        q = self.switch.queues()
        return {k: q[k][self._rows] for k in COUNTERS}

    def _apply(self, learner: int) -> None:
        kmin, kmax, pmax = self.templates[learner][self.template[learner]]
        self.switch.set_ecn(
            int(self.port[learner]),
            f"{kmin}B",
            f"{kmax}B",
            pmax,
            traffic_class=int(self.traffic_class[learner]),
        )

    def step(self) -> None:
        counters = self._counters()
        states, rewards, _ = self.observer.observe(counters, self.interval, self.template)
        if self._previous is not None:
            acted, before, chosen = self._previous
            if acted.size:
                taken = (before[acted], chosen[acted], rewards[acted], states[acted])
                if self.model == "shared":
                    self.dqn.remember(*taken)
                else:
                    self.dqn.remember(acted, *taken)
        quiet = (counters["dequeued"] == self._dequeued) & (counters["queue_bytes"] == 0)
        self._dequeued = counters["dequeued"].copy()
        self._idle_for = np.where(quiet, self._idle_for + 1, 0)
        idle = self._idle_for >= IDLE_INTERVALS
        acting = np.flatnonzero(~idle)
        self.skipped += int(idle.sum())
        self.rewards.append(rewards)
        self.busy.append(~idle)
        self.loaded.append(self.observer.loaded)
        if acting.size:
            if self.model == "shared":
                chosen = self.dqn.act(states[acting], self.visits[acting])
                self.visits[acting] += 1
            else:
                chosen = self.dqn.act(states, acting=acting)[acting]
            changed = acting[chosen != self.template[acting]]
            self.template[acting] = chosen
            for learner in changed:
                self._apply(int(learner))
            self.decisions += int(acting.size)
        self._previous = (acting, states, self.template.copy())
        self.steps += 1
        if self.train and self.steps % self.train_every == 0:
            if self.model == "shared":
                loss = self.dqn.train_once_at(self.now)
            else:
                loss = self.dqn.train_step()
            if loss is not None:
                self.losses.append(loss)
        if self.model == "per-queue" and self.steps % self.share_every == 0:
            self.memory.push(self.dqn.recent(self.share_every))
            if self.train:
                self.memory.pull_into(self.dqn, self.pull)


def model_states(agents: list[Acc]) -> dict:
    """The agents' learners as state dicts: the shared network under `SHARED_MODEL`, or
    each switch's per-queue learners under its name (`Acc(pretrained=...)` takes
    either)."""
    if agents and agents[0].model == "shared":
        return {SHARED_MODEL: agents[0].dqn.state_dict()}
    return {a.switch.name: a.dqn.state_dict() for a in agents}


def save_models(agents: list[Acc], path: str | Path) -> None:
    """The agents' learners (`model_states`) in one file."""
    import torch

    torch.save(model_states(agents), Path(path))


def read_models(path: str | Path) -> dict:
    """Learners saved by `save_models`, for `Acc(pretrained=...)` (read with
    `torch.load(weights_only=True)`: tensors only, no code)."""
    import torch

    return torch.load(Path(path), weights_only=True)
