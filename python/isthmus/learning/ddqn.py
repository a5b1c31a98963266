"""Double DQN for many small learners at once: every learner of a group (the egress
queues of one switch, in ACC) has its own Q-network, target network, replay memory and
exploration, and the group acts and trains in one batched tensor operation.

1. A learner's Q-network is an MLP (state -> hidden -> hidden -> one value per action);
   a group's networks are stacked weight tensors, so one `torch.baddbmm` per layer
   evaluates every learner on its own inputs.
2. Acting: epsilon-greedy, each learner's epsilon = max(`epsilon_min`, `epsilon_start`
   x `epsilon_decay`^visits), visits counting the times that learner acted (a queue
   that stays idle keeps exploring when it first congests), each draw from the group's
   own generator.
3. Memory: each learner keeps its last `capacity` transitions (s, a, r, s') in a ring;
   a step stores one transition for every learner that acted.
4. Training (`train_step`): each learner samples `batch` of its own transitions; the
   Double DQN target r + gamma Q_target(s', argmax_a Q_online(s', a)) (van Hasselt et
   al., AAAI 2016), Huber loss, Adam; the target networks are replaced by the online
   ones every `target_every` training steps.
5. Sharing (`GlobalMemory`): learners push recent transitions to a memory every group
   shares and pull samples of it into their own memories (ACC's global experience
   replay); that memory is TorchRL's `ReplayBuffer`.

Why not TorchRL for the rest: its `DQNLoss` and replay buffers take one network and one
buffer at a time, and a switch's tens of learners trained one by one cost tens of
Python-level optimizer steps per control interval; stacking them keeps each learner
independent (disjoint parameters, per-element Adam) at the price of one step.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from isthmus.arguments import U32, whole
from isthmus.learning.settings import DqnSettings, dqn_settings


def exploration(settings: DqnSettings, visits: np.ndarray) -> np.ndarray:
    """Epsilon after `visits` decisions: `epsilon_start` x `epsilon_decay`^visits, at
    least `epsilon_min`."""
    s = settings
    return np.maximum(s.epsilon_min, s.epsilon_start * s.epsilon_decay ** np.asarray(visits))


class StackedMlp(nn.Module):
    """`learners` independent MLPs with two hidden layers, evaluated together."""

    def __init__(self, learners: int, inputs: int, hidden: int, outputs: int, generator):
        super().__init__()
        sizes = [(inputs, hidden), (hidden, hidden), (hidden, outputs)]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in sizes:
            bound = 1.0 / np.sqrt(fan_in)
            w = (torch.rand(learners, fan_in, fan_out, generator=generator) * 2 - 1) * bound
            b = (torch.rand(learners, 1, fan_out, generator=generator) * 2 - 1) * bound
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(b))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (learners, batch, inputs) -> (learners, batch, outputs)."""
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = torch.relu(x)
        return x


class DoubleDqn:
    """A group of `learners` Double-DQN learners over `state_dim` states and `actions`
    discrete actions."""

    def __init__(
        self,
        learners: int,
        state_dim: int,
        actions: int,
        settings: DqnSettings | dict | None = None,
        *,
        seed: int = 0,
        device: str | torch.device | None = None,
    ):
        for name, value in (("learners", learners), ("state_dim", state_dim), ("actions", actions)):
            whole(value, name, 0, U32)
        if learners < 1 or state_dim < 1 or actions < 2:
            raise ValueError(
                f"a DQN group needs at least one learner, one state feature and two "
                f"actions, got {learners}, {state_dim}, {actions}"
            )
        settings = dqn_settings(settings)
        seed = whole(seed, "seed", 0, 2**63 - 1)
        self.learners, self.state_dim, self.actions = learners, state_dim, actions
        self.settings = settings
        # CPU unless asked: a switch's networks are tens of units wide and evaluated a
        # few hundred states at a time, where a GPU's launch cost exceeds the work.
        self.device = torch.device(device or "cpu")
        generator = torch.Generator().manual_seed(seed)
        self.online = StackedMlp(learners, state_dim, settings.hidden, actions, generator).to(
            self.device
        )
        self.target = copy.deepcopy(self.online)
        self.optimizer = torch.optim.Adam(self.online.parameters(), lr=settings.learning_rate)
        self.rng = np.random.default_rng([seed, 4096])
        cap = settings.capacity
        self.states = np.zeros((learners, cap, state_dim), dtype=np.float32)
        self.next_states = np.zeros((learners, cap, state_dim), dtype=np.float32)
        self.taken = np.zeros((learners, cap), dtype=np.int64)
        self.rewards = np.zeros((learners, cap), dtype=np.float32)
        self.stored = np.zeros(learners, dtype=np.int64)
        self.visits = np.zeros(learners, dtype=np.int64)
        self.steps = 0
        self.train_steps = 0

    @property
    def epsilon(self) -> np.ndarray:
        """Each learner's exploration rate now."""
        return exploration(self.settings, self.visits)

    def q_values(self, states: np.ndarray) -> np.ndarray:
        """Each learner's action values for its state: (learners, state_dim) -> (learners,
        actions)."""
        with torch.no_grad():
            x = torch.as_tensor(states, dtype=torch.float32, device=self.device)[:, None, :]
            return self.online(x)[:, 0, :].cpu().numpy()

    def act(
        self, states: np.ndarray, explore: bool = True, acting: np.ndarray | None = None
    ) -> np.ndarray:
        """An action per learner: greedy, or with probability its epsilon a random one.
        `acting`: the learners that act now (default all); only their visits count."""
        greedy = self.q_values(states).argmax(axis=1)
        if not explore:
            return greedy
        self.steps += 1
        random = self.rng.random(self.learners) < self.epsilon
        self.visits[slice(None) if acting is None else acting] += 1
        return np.where(random, self.rng.integers(self.actions, size=self.learners), greedy)

    def remember(
        self,
        learners: np.ndarray,
        states: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_states: np.ndarray,
    ) -> None:
        """Stores one transition for each learner listed in `learners`."""
        learners = np.asarray(learners, dtype=np.int64)
        # A learner listed k times stores k transitions in its next k slots, in order.
        order = np.argsort(learners, kind="stable")
        ranked = learners[order]
        starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
        rank = np.empty_like(learners)
        rank[order] = np.arange(len(ranked)) - np.repeat(
            starts, np.diff(np.r_[starts, len(ranked)])
        )
        slot = (self.stored[learners] + rank) % self.settings.capacity
        self.states[learners, slot] = states
        self.taken[learners, slot] = actions
        self.rewards[learners, slot] = rewards
        self.next_states[learners, slot] = next_states
        np.add.at(self.stored, learners, 1)

    def recent(self, count: int) -> dict[str, np.ndarray]:
        """Every learner's latest `count` transitions, flattened (for sharing)."""
        cap = self.settings.capacity
        rows = []
        for learner in range(self.learners):
            n = min(count, self.stored[learner], cap)
            slots = (self.stored[learner] - 1 - np.arange(n)) % cap
            rows.extend((learner, s) for s in slots)
        if not rows:
            return {}
        who, slot = np.array(rows).T
        return {
            "state": self.states[who, slot],
            "action": self.taken[who, slot],
            "reward": self.rewards[who, slot],
            "next_state": self.next_states[who, slot],
        }

    def train_step(self) -> float | None:
        """One Double-DQN update of every learner with at least a batch in memory;
        returns the mean loss (None if none could train)."""
        s = self.settings
        ready = np.flatnonzero(self.stored >= s.batch)
        if ready.size == 0:
            return None
        filled = np.minimum(self.stored[ready], s.capacity)
        picks = (self.rng.random((ready.size, s.batch)) * filled[:, None]).astype(np.int64)
        rows = ready[:, None]
        dev = self.device
        state = torch.as_tensor(self.states[rows, picks], device=dev)
        action = torch.as_tensor(self.taken[rows, picks], device=dev)
        reward = torch.as_tensor(self.rewards[rows, picks], device=dev)
        after = torch.as_tensor(self.next_states[rows, picks], device=dev)
        index = torch.as_tensor(ready, device=dev)
        q_all = self.online(_all_rows(state, index, self.learners))[index]
        q = q_all.gather(2, action[..., None])[..., 0]
        with torch.no_grad():
            best = self.online(_all_rows(after, index, self.learners))[index].argmax(2)
            next_q = self.target(_all_rows(after, index, self.learners))[index]
            target = reward + s.gamma * next_q.gather(2, best[..., None])[..., 0]
        loss = nn.functional.smooth_l1_loss(q, target)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.train_steps += 1
        if self.train_steps % s.target_every == 0:
            self.target.load_state_dict(self.online.state_dict())
        return float(loss.item())

    def state_dict(self) -> dict:
        return {
            "online": self.online.state_dict(),
            "shape": torch.tensor([self.learners, self.state_dim, self.actions]),
            "steps": torch.tensor(self.steps),
            "visits": torch.as_tensor(self.visits),
        }

    def load_state_dict(self, state: dict) -> None:
        shape = tuple(int(v) for v in state["shape"])
        if shape != (self.learners, self.state_dim, self.actions):
            raise ValueError(
                f"the saved model has (learners, state features, actions) = {shape}, this "
                f"group {(self.learners, self.state_dim, self.actions)}"
            )
        self.online.load_state_dict(state["online"])
        self.target.load_state_dict(state["online"])
        self.steps = int(state["steps"])
        if "visits" in state:
            self.visits = state["visits"].numpy().astype(np.int64).copy()


class SharedDqn:
    """One Double-DQN network that many queues act through, as ACC installs one model
    on every switch: the queues' states say what tells them apart (link rate, class),
    each queue explores by its own visits (kept by whoever acts for it), every queue's
    transitions go to one replay memory, and one training step serves them all.

    It is a group of one learner (`DoubleDqn`), so acting, memory and training are that
    group's; `batch` should be larger than a per-queue learner's, since one step now
    learns for every queue."""

    def __init__(
        self,
        state_dim: int,
        actions: int,
        settings: DqnSettings | dict | None = None,
        *,
        seed: int = 0,
        device: str | torch.device | None = None,
    ):
        self.group = DoubleDqn(1, state_dim, actions, settings, seed=seed, device=device)
        self.settings = self.group.settings
        self.state_dim, self.actions = state_dim, actions
        self.visits: dict[str, np.ndarray] = {}
        """Each group of queues' decisions so far (by name: a switch's queues), which
        set their exploration; they carry over with the network."""
        self._trained_at: int | None = None

    def visits_of(self, name: str, queues: int) -> np.ndarray:
        """The visit counts of `name`'s `queues` queues (zeros the first time), to be
        updated in place by whoever acts for them."""
        counts = self.visits.setdefault(name, np.zeros(queues, dtype=np.int64))
        if len(counts) != queues:
            raise ValueError(
                f"'{name}' acted through this network with {len(counts)} queues, now "
                f"{queues}: one network carries on over runs of the same fabric"
            )
        return counts

    def q_values(self, states: np.ndarray) -> np.ndarray:
        """(queues, state_dim) -> (queues, actions)."""
        with torch.no_grad():
            x = torch.as_tensor(states, dtype=torch.float32, device=self.group.device)[None]
            return self.group.online(x)[0].cpu().numpy()

    def act(self, states: np.ndarray, visits: np.ndarray | None) -> np.ndarray:
        """An action per queue: greedy, or with probability its epsilon (by `visits`,
        its decisions so far) a random one; `visits` None: greedy only."""
        greedy = self.q_values(states).argmax(axis=1)
        if visits is None:
            return greedy
        rng = self.group.rng
        random = rng.random(len(states)) < exploration(self.settings, visits)
        self.group.steps += 1
        return np.where(random, rng.integers(self.actions, size=len(states)), greedy)

    def remember(
        self,
        states: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_states: np.ndarray,
    ) -> None:
        learner = np.zeros(len(rewards), dtype=np.int64)
        self.group.remember(learner, states, actions, rewards, next_states)

    @property
    def stored(self) -> int:
        """Transitions stored so far (the memory keeps the last `capacity`)."""
        return int(self.group.stored[0])

    def train_once_at(self, now_ps: int) -> float | None:
        """One training step, the first time it is asked at `now_ps`: the agents of
        every switch ask at each control interval, and the network trains once for all
        (returns the loss; None when it did not train)."""
        if self._trained_at == now_ps:
            return None
        self._trained_at = now_ps
        return self.group.train_step()

    def state_dict(self) -> dict:
        return self.group.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.group.load_state_dict(state)


def _all_rows(x: torch.Tensor, index: torch.Tensor, learners: int) -> torch.Tensor:
    """Places the ready learners' batches at their rows of a (learners, batch, dim)
    tensor, zeros elsewhere, so the stacked networks evaluate each on its own."""
    full = torch.zeros((learners, *x.shape[1:]), dtype=x.dtype, device=x.device)
    full[index] = x
    return full


class GlobalMemory:
    """Transitions every group shares (ACC's global replay memory): groups push their
    learners' recent transitions and pull samples into their own learners' memories."""

    def __init__(self, capacity: int = 20_000, seed: int = 0):
        import logging

        from tensordict import TensorDict
        from torchrl.data import LazyTensorStorage, ReplayBuffer

        # TorchRL announces every storage it initialises at INFO (its import sets the
        # level); that is not the user's to read.
        logging.getLogger("torchrl").setLevel(logging.WARNING)

        self._tensordict = TensorDict
        self.buffer = ReplayBuffer(
            storage=LazyTensorStorage(capacity),
            generator=torch.Generator().manual_seed(seed),
        )

    def __len__(self) -> int:
        return len(self.buffer)

    def push(self, transitions: dict[str, np.ndarray]) -> None:
        if not transitions:
            return
        n = len(transitions["reward"])
        self.buffer.extend(
            self._tensordict(
                {k: torch.as_tensor(v) for k, v in transitions.items()}, batch_size=[n]
            )
        )

    def pull_into(self, group: DoubleDqn, per_learner: int) -> None:
        """Gives each learner of `group` `per_learner` transitions drawn from here."""
        if len(self.buffer) == 0 or per_learner <= 0:
            return
        n = group.learners * per_learner
        sample = self.buffer.sample(n)
        learners = np.tile(np.arange(group.learners), per_learner)
        for i in range(per_learner):
            rows = slice(i * group.learners, (i + 1) * group.learners)
            take = learners[rows]
            group.remember(
                take,
                sample["state"][rows].numpy(),
                sample["action"][rows].numpy(),
                sample["reward"][rows].numpy(),
                sample["next_state"][rows].numpy(),
            )
