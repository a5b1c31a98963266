"""What a learner that tunes one egress queue's ECN marking sees, does and earns (ACC:
Yan et al., "ACC: Automatic ECN Tuning for High-Speed Datacenter Networks", SIGCOMM
2021). Shared by the ACC switch agent and the multi-agent environment, so training and
deployment read queues the same way.

1. Actions: a discrete set of ECN templates (Kmin, Kmax, Pmax): Kmin in {2, 5, 10, 20,
   40, 80, 160, 320} KB, Kmax 4 or 20 times Kmin, Pmax 1 % or 20 %, the sizes scaled
   by the queue's link rate / 25 Gb/s (the scaling DCQCN's production profile uses):
   32 templates spanning both static baselines' ranges.
2. Observation, per control interval: the interval's mean queue length (as a fraction
   of `queue_ref`, capped at 4), the transmit rate and the transmit rate of ECN-marked
   packets (as fractions of the link rate), the fraction of transmitted packets
   marked, and the current template (its index over the number of templates); the
   last `history` intervals side by side (k = 3 in ACC); then what tells the queue
   apart from others (its link rate over 100 Gb/s, its traffic class over 7), so that
   one network can serve queues of every rate and class (ACC installs one model on
   every switch).
3. Reward: beta x utilisation + (1 - beta) x (1 - log2(1 + q / q_ref)), link
   utilisation against the interval's mean queue q (ACC weighs the two). The queue
   term is 1 for an empty queue, 0 at `queue_ref` and keeps falling beyond it, so a
   queue of megabytes still scores worse than one of hundreds of kilobytes (a term
   that levels off, such as q_ref / (q_ref + q), scores them alike and leaves a
   learner no gradient out of a standing queue).
4. The interval's mean queue is Little's law on the engine's counters: the sojourn
   times of the packets dequeued in it, summed, over its length, times their mean
   size. A reading at one instant would see a DCQCN sawtooth at a random phase. The
   marked rate comes from the marks counted this interval times the interval's mean
   dequeued packet size (the engine counts marks, not marked bytes).
"""

from __future__ import annotations

import numpy as np

from isthmus.arguments import U16, number, whole

FEATURES = 5
"""Features an observation holds per interval of its history."""
IDENTITY_FEATURES = 2
"""Features that tell a queue apart: its link rate and its traffic class."""
# The link rate and class that scale the identity features to about [0, 1].
IDENTITY_RATE_BPS = 100e9
IDENTITY_CLASS = 7
# The queue each learner's reward is measured against: DCQCN's production Kmin (100 KB
# at 25 Gb/s, scaled with the link), a queue static settings already call congested.
QUEUE_REF_BYTES_AT_25G = 100_000
# The queue counters an observation reads.
COUNTERS = ("queue_bytes", "dequeued", "dequeued_bytes", "aqm_marks", "sojourn_ps")
KMIN_KB = (2, 5, 10, 20, 40, 80, 160, 320)
KMAX_FACTORS = (4, 20)
PMAX = (0.01, 0.2)
REFERENCE_BPS = 25e9
LOADED = 0.1
"""A queue is loaded in an interval when it sent at least this fraction of its link
rate or its mean queue reached this fraction of its reference length: what its
template can change (a port carrying only acknowledgements is busy but never loaded)."""


def templates(rate_bps: float) -> list[tuple[int, int, float]]:
    """The (Kmin bytes, Kmax bytes, Pmax) choices for a queue on a link of `rate_bps`."""
    scale = rate_bps / REFERENCE_BPS
    return [
        (round(k * 1000 * scale), round(k * 1000 * f * scale), p)
        for k in KMIN_KB
        for f in KMAX_FACTORS
        for p in PMAX
    ]


NUM_TEMPLATES = len(KMIN_KB) * len(KMAX_FACTORS) * len(PMAX)


def queue_ref_bytes(rates_bps: np.ndarray) -> np.ndarray:
    """Each queue's reference length: `QUEUE_REF_BYTES_AT_25G` scaled by its link rate."""
    return QUEUE_REF_BYTES_AT_25G * np.asarray(rates_bps, dtype=np.float64) / REFERENCE_BPS


def queue_term(queue_bytes: np.ndarray, queue_ref: np.ndarray) -> np.ndarray:
    """The reward's queue term: 1 empty, 0 at `queue_ref`, falling without bound."""
    return 1.0 - np.log2(1.0 + np.asarray(queue_bytes, dtype=np.float64) / queue_ref)


class QueueObserver:
    """Turns successive readings of some queues' counters into observations and
    rewards. `rates_bps`: each queue's link rate; `queue_ref_bytes`: each queue's
    reference length."""

    def __init__(
        self,
        rates_bps: np.ndarray,
        queue_ref_bytes: np.ndarray,
        *,
        history: int = 3,
        beta: float = 0.5,
        classes: np.ndarray | None = None,
    ):
        history = whole(history, "history", 1, U16, "intervals an observation spans")
        # beta weighs utilisation against queueing.
        beta = number(beta, "beta", low=0, high=1)
        self.rates = np.asarray(rates_bps, dtype=np.float64)
        self.queue_ref = np.asarray(queue_ref_bytes, dtype=np.float64)
        self.history = history
        self.beta = beta
        n = len(self.rates)
        traffic_class = np.zeros(n) if classes is None else np.asarray(classes, dtype=np.float64)
        self.identity = np.stack(
            [self.rates / IDENTITY_RATE_BPS, traffic_class / IDENTITY_CLASS], axis=1
        ).astype(np.float32)
        self.window = np.zeros((n, history, FEATURES), dtype=np.float32)
        self.loaded = np.zeros(n, dtype=bool)
        """Which queues were loaded (`LOADED`) in the interval last observed."""
        self._last: dict[str, np.ndarray] | None = None

    @property
    def state_dim(self) -> int:
        return self.history * FEATURES + IDENTITY_FEATURES

    def states(self) -> np.ndarray:
        return np.concatenate([self.window.reshape(len(self.rates), -1), self.identity], axis=1)

    def observe(
        self, counters: dict[str, np.ndarray], elapsed_ps: int, template: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Reads the queues' counters (`COUNTERS`) after `elapsed_ps`; returns (states,
        rewards, utilisation)."""
        now = {k: counters[k].astype(np.float64) for k in COUNTERS if k != "queue_bytes"}
        if self._last is None or elapsed_ps <= 0:
            delta = {k: np.zeros_like(v) for k, v in now.items()}
        else:
            delta = {k: now[k] - self._last[k] for k in now}
        self._last = now
        seconds = max(elapsed_ps, 1) / 1e12
        tx_rate = delta["dequeued_bytes"] * 8 / seconds / self.rates
        packets = np.maximum(delta["dequeued"], 1.0)
        marked_fraction = np.minimum(delta["aqm_marks"] / packets, 1.0)
        mean_packet = delta["dequeued_bytes"] / packets
        queue = delta["sojourn_ps"] / max(elapsed_ps, 1) * mean_packet
        marked_rate = delta["aqm_marks"] * mean_packet * 8 / seconds / self.rates
        features = np.stack(
            [
                np.minimum(queue / self.queue_ref, 4.0),
                np.minimum(tx_rate, 1.0),
                np.minimum(marked_rate, 1.0),
                marked_fraction,
                np.asarray(template, dtype=np.float64) / max(NUM_TEMPLATES - 1, 1),
            ],
            axis=1,
        ).astype(np.float32)
        self.window = np.concatenate([self.window[:, 1:], features[:, None, :]], axis=1)
        utilisation = np.minimum(tx_rate, 1.0)
        self.loaded = (utilisation >= LOADED) | (queue >= LOADED * self.queue_ref)
        rewards = self.beta * utilisation + (1 - self.beta) * queue_term(queue, self.queue_ref)
        return self.states(), rewards.astype(np.float32), utilisation
