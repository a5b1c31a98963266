"""Diolkos: each smart switch forecasts its ports' throughput from its own counters and
moves flows to the port predicted best, loop-free.

Bel, Pata, Vlimant, Tallent, Balcas, Spiropulu, "Diolkos: Improving Ethernet Throughput
through Dynamic Port Selection", ACM Computing Frontiers 2021. One `Diolkos` agent runs
on each smart switch, with that switch's view only:

1. Every r_c (`sample_period`) the switch reads bytes received + transmitted on each
   port, NB; the throughput of the last period is TP = (NB_t - NB_{t-r_c}) / r_c
   (bytes/s). The row of every port's TP goes into the switch's own ReplayDB (bounded,
   time-ordered).
2. Once the ReplayDB holds `train_after` rows, the switch trains its forecaster on them:
   the 20/60/20 test/train/validation split by time, a trailing moving average of
   `smoothing` (75) rows over what the model reads, z-score normalisation; every port's
   past feeds the forecast of every port (multivariate). Dense with one hidden layer by
   default; any forecaster of `isthmus.predict` by name (`ewma` is the paper's
   heuristic). Window BS, lead N and horizon O are `window`, `lead`, `horizon` (the
   paper's best: 5, 1, 1). With `retrain_every` it retrains on its newest rows that
   often (online mode); a model trained centrally and pushed through the
   `ForecastService` is used from the start instead (the paper's experiment).
3. Every (N + O) r_c, a decision round: the switch's forecast comes from the shared
   `ForecastService` (every switch's in one batched call); F is each port's predicted
   mean TP over the O forecast steps. The paper predicts each port's throughput "if a
   data flow were to be sent through it" and moves a flow when "the current port has a
   lower predicted performance"; `rule` reads that one of two ways:
   - "headroom" (the default): a port's score is its two-way capacity less F, the
     throughput a flow sent through it could still get; a loaded port scores low.
   - "throughput": a port's score is F itself, the highest forecast throughput best.
     The port a flow already takes is then mostly its busiest, so the best-scored.
4. For each flow direction the switch forwarded in the last round, the candidate
   ports are those loop-free for the flow's destination (`isthmus.control.loop_free`:
   each hop lowers (distance, name rank), so no switch's choice can close a loop),
   less the port it came in by. The best are the candidates with the highest score,
   and, α exploration, every candidate whose measured TP is below `alpha` of its
   capacity (both directions), so ports nothing uses yet get tried. A best-scored port
   that would loop is passed over for the next best (counted as a loop fallback).
5. One of the best is drawn from the switch's own random stream (equal predictions
   are picked at random); if it is not the flow's current port, an entry matching the
   flow and its destination (the tag every packet carries) sends the flow there. The choice holds
   until the next round, N + O steps later. A flow some higher-priority entry keeps
   where it is (an operator's pin) is noticed and left alone.

Until the model is trained the switch forwards by its default routing and counts the
round as untrained. `stats` holds what the switch did and what training and inference
cost it.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from isthmus.control.apps.parameters import MAX_ROWS, Period, Priority, Seed, Steps, checked
from isthmus.control.events import EntryRemoved
from isthmus.control.forecasts import SERVICE_KEY, ForecastService, app_forecaster
from isthmus.control.loop_free import allowed_ports
from isthmus.control.plane import SwitchAgent, SwitchHandle
from isthmus.predict.base import Forecaster
from isthmus.predict.models import NEURAL
from isthmus.predict.neural import NeuralForecaster
from isthmus.predict.replay import ReplayDB
from isthmus.predict.splits import split_rows
from isthmus.units import time_ps

PS = 1e12
# The rows a switch's ReplayDB may hold, in bytes (8 per port per row).
MAX_REPLAY_BYTES = 2**30
Rule = Literal["headroom", "throughput"]
"""How a decision scores a port from its forecast (step 3 of the algorithm)."""


@dataclass
class DiolkosStats:
    rounds: int = 0
    untrained_rounds: int = 0
    moves: int = 0
    loop_fallbacks: int = 0
    """Moves for which the best-scored port was not a candidate (it would have closed a
    loop or sent the flow back where it came from) and a lower-scored one was taken."""
    pinned: int = 0
    training_seconds: list[float] = field(default_factory=list)
    trained_rows: int = 0


class Diolkos(SwitchAgent):
    """Parameters (scenario files give them as strings and numbers):

    model: a forecaster name of `isthmus.predict.MODELS` ("dense", "gru", "ewma", ...)
        or, from Python, a callable taking the forecaster options and returning one.
    sample_period: r_c. window, lead, horizon: BS, N, O. smoothing: the moving average
        over what the model reads (None: raw). alpha: the exploration threshold, a
        fraction of the port's two-way capacity. rule: how a port is scored from its
        forecast ("headroom": capacity less forecast; "throughput": the forecast).
    train_after: rows gathered before the first training; retrain_every: rows between
        later trainings (None: train once). replay_capacity: the most rows kept.
    model_options: further keyword options of the forecaster (hidden, epochs, ...).
    priority: of the entries that move flows; idle_timeout: they leave once the flow
        is quiet this long. seed: with the switch's name, its random stream.
    """

    @checked
    def __init__(
        self,
        switch: SwitchHandle,
        *,
        model: str | Callable[..., Forecaster] = "dense",
        sample_period: Period = "1s",
        window: Steps = 5,
        lead: Steps = 1,
        horizon: Steps = 1,
        smoothing: Steps | None = 75,
        alpha: Annotated[float, Field(ge=0, lt=1)] = 0.01,
        rule: Rule = "headroom",
        train_after: Annotated[int, Field(ge=3)] = 500,
        retrain_every: Annotated[int, Field(ge=1)] | None = None,
        replay_capacity: Annotated[int, Field(ge=3, le=MAX_ROWS)] = 100_000,
        model_options: dict[str, Any] | None = None,
        priority: Priority = 20,
        idle_timeout: Period = "5s",
        seed: Seed = 0,
    ) -> None:
        super().__init__(switch)
        self.period = time_ps(sample_period)
        replay_bytes = replay_capacity * switch.num_ports * 8
        if replay_bytes > MAX_REPLAY_BYTES:
            raise ValueError(
                f"replay_capacity {replay_capacity} rows of {switch.num_ports} ports would keep "
                f"{replay_bytes / 2**20:.0f} MiB of rows on '{switch.name}'; at most "
                f"{MAX_REPLAY_BYTES // 2**20} MiB a switch: give a smaller replay_capacity"
            )
        self.alpha = alpha
        self.rule = rule
        self.train_after = train_after
        self.retrain_every = retrain_every
        self.priority = priority
        self.idle_timeout = idle_timeout
        options = dict(model_options or {})
        if isinstance(model, str) and model in NEURAL:
            options.setdefault("seed", seed)
        self.model: Forecaster = app_forecaster(
            model, options, window=window, lead=lead, horizon=horizon, smoothing=smoothing
        )
        if switch.shared(SERVICE_KEY, ForecastService).pushed(switch) is None:
            _check_train_after(self.model, train_after)
        self.round_steps = self.model.lead + self.model.horizon
        names = [str(port) for port in range(switch.num_ports)]
        self.replay = ReplayDB(replay_capacity, names, switch=switch.name)
        self.random = np.random.default_rng([seed, zlib.crc32(switch.name.encode())])
        self.stats = DiolkosStats()
        self._trained_at: int | None = None
        # The model's state follows the newest row (it has been fitted or reset since).
        self._current = False
        self._submitted = False
        self._last_bytes: np.ndarray | None = None
        self._capacity = np.zeros(0)
        self._allowed = np.zeros((0, 0), dtype=bool)
        self._samples = 0
        self._moved: dict[tuple[int, int], tuple[int, int, int]] = {}
        """(flow, dst) -> (entry, port, time moved), for the flows this switch moved."""
        self._moved_by_entry: dict[int, tuple[int, int]] = {}
        self._pinned: set[tuple[int, int]] = set()

    # ---- lifecycle ---------------------------------------------------------------------

    def on_start(self) -> None:
        handle = self.switch
        handle.watch_flows()
        self._allowed = allowed_ports(handle.hops_via(), handle.name, handle.neighbours())
        ports = handle.ports()
        self._capacity = ports["rate_bps"].astype(np.float64) / 8 * 2
        self._last_bytes = (ports["rx_bytes"] + ports["tx_bytes"]).astype(np.float64)
        self.service: ForecastService = handle.shared(SERVICE_KEY, ForecastService)
        pushed = self.service.pushed(handle)
        if pushed is not None:
            if pushed.variables != handle.num_ports:
                raise ValueError(
                    f"the model pushed to '{handle.name}' reads {pushed.variables} ports but "
                    f"the switch has {handle.num_ports}; train it on this switch's rows"
                )
            self.model = pushed
            self._trained_at = 0
            # Rounds follow the pushed model's lead and horizon.
            self.round_steps = pushed.lead + pushed.horizon
        self.every(self.period, self._sample)
        # Decisions come just after the sample that closes their round, once every
        # switch has sampled and submitted, so one batched call serves them all.
        first = self.now + self.round_steps * self.period + 1
        self.every(self.round_steps * self.period, self._decide, first=first)

    @property
    def trained(self) -> bool:
        return self._trained_at is not None

    # ---- 1-2: counters, ReplayDB, training ----------------------------------------------

    def _sample(self) -> None:
        ports = self.switch.ports()
        nb = (ports["rx_bytes"] + ports["tx_bytes"]).astype(np.float64)
        assert self._last_bytes is not None
        throughput = (nb - self._last_bytes) / (self.period / PS)
        self._last_bytes = nb
        self.replay.add(self.now / PS, throughput)
        self._samples += 1
        if self._current:
            self.model.update(throughput)
        elif self.trained and len(self.replay) >= self._context_rows():
            # A pushed model starts from this switch's own newest rows.
            self.model.reset(self.replay.latest(self._context_rows()))
            self._current = True
        if self._due_for_training():
            self._train()
        if self._current and self._samples % self.round_steps == 0:
            self._submit()

    def _due_for_training(self) -> bool:
        if self._trained_at is None:
            return len(self.replay) >= self.train_after
        return (
            self.retrain_every is not None
            and self._samples - self._trained_at >= self.retrain_every
        )

    def _train(self) -> None:
        segments = self.replay.split()
        started = time.perf_counter()
        self.model.fit(segments.train, segments.validation)
        self.stats.training_seconds.append(time.perf_counter() - started)
        self.stats.trained_rows = len(segments.train)
        self._trained_at = self._samples
        # The model forecasts from the newest rows once there are enough of them.
        self._current = len(self.replay) >= self._context_rows()
        if self._current:
            self.model.reset(self.replay.latest(self._context_rows()))

    def _context_rows(self) -> int:
        """Rows a forecast reads: the window, plus what its moving average spans."""
        needed = max(self.model.min_context, self.model.window)
        return needed + (self.model.smoothing or 1) - 1

    def _submit(self) -> None:
        self.service.submit(self.switch, self.model)
        self._submitted = True

    # ---- 3-5: decisions ---------------------------------------------------------------

    def _decide(self) -> None:
        self.stats.rounds += 1
        if not self._submitted:
            self.stats.untrained_rounds += 1
            return
        self._submitted = False
        forecast = self.service.forecast(self.switch)
        predicted = np.asarray(forecast, dtype=np.float64).mean(axis=0)
        scores = self._capacity - predicted if self.rule == "headroom" else predicted
        idle = self.replay.latest(1)[0] < self.alpha * self._capacity
        self._move_flows(scores, idle)

    def _move_flows(self, scores: np.ndarray, idle: np.ndarray) -> None:
        flows = self.switch.flows()
        active = flows["last_ps"] >= self.now - self.round_steps * self.period
        if not active.any():  # nothing to move (and no draw: the stream stays as it is)
            return
        dst = flows["dst"][active].astype(np.int64)
        in_port = flows["in_port"][active].astype(np.int64)
        current = flows["out_port"][active].astype(np.int64)
        ports = np.arange(len(scores))
        # Every active flow direction at once: its candidates, the best of them, a draw.
        candidates = self._allowed[:, dst].T & (ports[None, :] != in_port[:, None])
        top = np.where(candidates, scores[None, :], -np.inf).max(axis=1)
        best = candidates & (idle[None, :] | (scores[None, :] >= top[:, None]))
        count = best.sum(axis=1)
        pick = np.floor(self.random.random(len(dst)) * count)
        choice = np.argmax(best.cumsum(axis=1) > pick[:, None], axis=1)
        moving = (count > 0) & (choice != current)
        # A best-scored port that would close a loop was passed over for the next best.
        self.stats.loop_fallbacks += int(np.sum(moving & (scores.max() > top)))
        flow_ids = flows["flow"][active]
        last = flows["last_ps"][active]
        for i in np.flatnonzero(moving):
            key = (int(flow_ids[i]), int(dst[i]))
            if key in self._pinned:
                continue
            moved = self._moved.get(key)
            if moved is not None and moved[1] != current[i] and int(last[i]) > moved[2]:
                # Its packets still leave by another port: a higher-priority entry
                # holds the flow there, which is not this switch's to override.
                self._pinned.add(key)
                self.stats.pinned += 1
                continue
            self._move(key, int(choice[i]), moved)

    def _move(self, key: tuple[int, int], port: int, previous: tuple | None) -> None:
        if previous is not None and previous[0] in self._moved_by_entry:
            self.switch.delete(previous[0])
        entry = self.switch.install(
            self.priority,
            flow=key[0],
            dst=key[1],
            output=port,
            idle_timeout=self.idle_timeout,
        )
        self._moved[key] = (entry, port, self.now)
        self._moved_by_entry[entry] = key
        self.stats.moves += 1

    def on_entry_removed(self, event: EntryRemoved) -> None:
        key = self._moved_by_entry.pop(event.entry, None)
        if key is not None and self._moved.get(key, (None,))[0] == event.entry:
            del self._moved[key]


def _check_train_after(model: Forecaster, train_after: int) -> None:
    """Refuses a `train_after` whose rows, split 20/60/20 (test, train, validation),
    leave the model's training or validation rows too few for one example (window +
    lead + horizon - 1 rows): a neural model scores every epoch on the validation rows
    and learns from the training rows, and would stop the run at its first training."""
    if not isinstance(model, NeuralForecaster):
        return
    span = model.window + model.lead + model.horizon - 1
    least = _least_rows(span)
    if train_after < least:
        raise ValueError(
            f"train_after ({train_after}) is too few rows: the first training splits them "
            f"20/60/20 into test, train and validation rows, and the train and validation "
            f"rows must each hold one example of {span} rows (window {model.window} + lead "
            f"{model.lead} + horizon {model.horizon} - 1); give train_after of at least "
            f"{least}, or a smaller window"
        )


def _least_rows(span: int) -> int:
    """The fewest rows whose Diolkos split has train and validation rows of `span` each."""
    rows = 3
    while True:
        try:
            split = split_rows(rows)
        except ValueError:  # too few for every segment to have a row
            rows += 1
            continue
        train = split.train.stop - split.train.start
        validation = split.validation.stop - split.validation.start
        if train >= span and validation >= span:
            return rows
        rows += 1
