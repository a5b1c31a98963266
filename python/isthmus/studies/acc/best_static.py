"""The best static template: the fixed ECN setting ACC has to beat for learning to pay.

1. Candidates: the 32 templates ACC's learners choose among (`isthmus.learning.ecn_queues.
   templates`: Kmin 2-320 KB, Kmax 4 or 20 times Kmin, Pmax 1 % or 20 %, scaled by the
   link rate / 25 Gb/s), all of them (`CANDIDATES`).
2. Training traffic: the same experiment (the same phases, loads and run length) on
   another seed (`TRAINING_SEED_OFFSET` added): other flow sizes, pairs and start times.
3. Each candidate is held on every port of every switch for the whole run
   (`TemplateEcn`), and every queue is scored each 1 ms interval with the learners' own
   reward (beta x utilisation + (1 - beta) x (1 - log2(1 + q / q_ref))). A run's score
   is the mean over loaded queue-intervals (`loaded_reward`: a queue that sent at least
   a tenth of its link or held a tenth of its reference queue, `ecn_queues.LOADED`; an
   idle queue, or one carrying only acknowledgements, scores about the same whatever
   its template). That is the quantity ACC's learners maximise, each for its own
   queue: the winner is the fixed setting that does best at ACC's own objective, not at
   any one figure of the table.
4. The winner is the argmax of the scores (ties to the lower index: the shorter queue).
5. The evaluation holds the winner on the test traffic (the seed itself), measured like
   every other scheme; the runs report the same score for every scheme (`reward`), so
   the learners' objective can be compared on test traffic too.

The sweep's job functions are in `runs` (they run the experiments); this module holds
what `network.control` attaches, and so imports nothing of the study's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from isthmus.control import SwitchAgent
from isthmus.control.apps.acc import IDLE_INTERVALS
from isthmus.learning.ecn_queues import (
    COUNTERS,
    NUM_TEMPLATES,
    QueueObserver,
    queue_ref_bytes,
    templates,
)
from isthmus.units import time_ps

BEST_STATIC = "best static"
"""The scheme's name in jobs, rows and figures."""
CANDIDATES = tuple(range(NUM_TEMPLATES))
"""Every template: one fabric run of each costs 0.5-1 wall s at the study's full spans
(heterogeneous, 20 ms phases; messages, 500 ms), small beside pre-training."""
TRAINING_SEED_OFFSET = 1000
"""The training traffic's seed is the test seed plus this."""


class ScoredEcn(SwitchAgent):
    """Sets one ECN marking on every port of its switch once (`marking`), then scores
    each queue of `classes` every `interval` with the learners' reward (`rewards`, one
    array an interval) and notes which were busy (`busy`) and loaded (`loaded`), as
    `Acc` does."""

    def __init__(self, switch, interval: str = "1ms", classes: tuple[int, ...] = (0,)):
        super().__init__(switch)
        self.interval, self.classes = interval, classes
        self.rewards: list[np.ndarray] = []
        self.busy: list[np.ndarray] = []
        self.loaded: list[np.ndarray] = []

    def marking(self, rate_bps: float) -> tuple[str, str, float]:
        """(Kmin, Kmax, Pmax) for a port of `rate_bps`."""
        raise NotImplementedError

    def on_start(self) -> None:
        rates = self.switch.ports()["rate_bps"].astype(np.float64)
        for port, rate in enumerate(rates):
            self.switch.set_ecn(port, *self.marking(rate))
        queues = self.switch.queues()
        self._rows = np.flatnonzero(np.isin(queues["class"], self.classes))
        queue_rates = rates[queues["port"][self._rows].astype(int)]
        self.observer = QueueObserver(
            queue_rates, queue_ref_bytes(queue_rates), classes=queues["class"][self._rows]
        )
        self._template = np.zeros(len(self._rows))
        counters = self._counters()
        self.observer.observe(counters, 0, self._template)
        self._dequeued = counters["dequeued"].copy()
        self._idle_for = np.zeros(len(self._rows), dtype=int)
        self.every(self.interval, self.step)

    def _counters(self) -> dict[str, np.ndarray]:
        q = self.switch.queues()
        return {k: q[k][self._rows] for k in COUNTERS}

    def step(self) -> None:
        counters = self._counters()
        _, rewards, _ = self.observer.observe(counters, time_ps(self.interval), self._template)
        quiet = (counters["dequeued"] == self._dequeued) & (counters["queue_bytes"] == 0)
        self._dequeued = counters["dequeued"].copy()
        self._idle_for = np.where(quiet, self._idle_for + 1, 0)
        self.rewards.append(rewards)
        self.busy.append(self._idle_for < IDLE_INTERVALS)
        self.loaded.append(self.observer.loaded)


class TemplateEcn(ScoredEcn):
    """Holds template `template` (an index into `templates(rate)`) on every port."""

    def __init__(self, switch, template: int, **options):
        if not 0 <= template < NUM_TEMPLATES:
            raise ValueError(f"template must be in 0..{NUM_TEMPLATES - 1}, got {template}")
        super().__init__(switch, **options)
        self.template = int(template)

    def marking(self, rate_bps: float) -> tuple[str, str, float]:
        kmin, kmax, pmax = templates(rate_bps)[self.template]
        return f"{kmin}B", f"{kmax}B", pmax


def loaded_reward(agents: Sequence) -> float:
    """The agents' mean reward over their loaded queues' intervals (`Acc` and
    `ScoredEcn` agents: every scheme's); NaN when no queue was loaded."""
    loaded = [r[m] for a in agents for r, m in zip(a.rewards, a.loaded, strict=True)]
    values = np.concatenate(loaded) if loaded else np.array([])
    return float(values.mean()) if values.size else float("nan")


def winner(scores: Sequence[float]) -> int:
    """The template of the highest score (NaN: not swept); ties to the lower index."""
    values = np.asarray(scores, dtype=np.float64)
    if np.isnan(values).all():
        raise ValueError("no template was scored")
    return int(np.nanargmax(values))


def template_label(index: int) -> str:
    """A template as shown in tables: its index and its values at 25 Gb/s."""
    kmin, kmax, pmax = templates(25e9)[index]
    return f"#{index} ({kmin // 1000}/{kmax // 1000} KB, {pmax:.0%})"
