"""IBCN: BCN driven by forecast queues (Tran, Nguyen, Souihi, Mellouk, "Towards a Novel
Congestion Notification Algorithm for Software-Defined Data Center Networks").

1. Every `interval` (the paper: 1 s; 500 ms while it collects its training set), poll
   every switch's egress queues: an 8 B request and a 104 B reply per switch, counted
   in `control_bytes`. A switch's queue is its fullest port's (`series="switch"`, the
   paper's one value per switch), or each port is its own series (`series="port"`).
2. The model (a forecaster from `isthmus.predict`: LSTM by default, or GRU, Skip-LSTM,
   BiLSTM, ARMA, ARAR, Holt-Winters, ...) reads the last `window` polls of every
   point and forecasts each point's next k = `horizon` queue sizes. It is either given
   fitted (`forecaster`) or fitted here on the first `training_polls` polls (the last
   fifth held out for early stopping). A given neural forecaster fitted on one series
   is one model every series shares (`NeuralForecaster.fit_segments` fits one on many
   switches' series): each series is forecast from its own last `window` polls, on any
   network, whatever its number of switches.
3. Each poll after that hands every congestion point its k forecasts (a switch's,
   for each of its ports, with `series="switch"`) in one command
   (`set_bcn_predictions`): at the switch, the class most of them fall in (n_a below
   Qeq, n_b between, n_c at or above Qsc) decides between no feedback / positive (to a
   regulated source), NORMAL and STOP, and e_IBCN = -(mean of the k - Qeq + w (Qa - Qd))
   replaces BCN's e; the sources' regulators are BCN's, unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from isthmus.control.apps.parameters import Period, Rows, Steps, checked
from isthmus.control.forecasts import app_forecaster
from isthmus.control.plane import Controller
from isthmus.predict import Forecaster
from isthmus.predict.neural import NeuralForecaster
from isthmus.units import time_ps

REQUEST_BYTES = 8
REPLY_BYTES = 104


class Ibcn(Controller):
    @checked
    def __init__(
        self,
        model: str = "lstm",
        interval: Period = "1s",
        window: Steps = 10,
        horizon: Steps = 5,
        training_polls: Rows = 0,
        model_options: dict[str, Any] | None = None,
        forecaster: Forecaster | None = None,
        series: Literal["switch", "port"] = "switch",
    ):
        self.series = series
        self.interval = time_ps(interval)
        # The last fifth of the training polls is held out for early stopping and must
        # hold one window and its horizon.
        least = 5 * (window + horizon)
        if forecaster is None and training_polls < least:
            raise ValueError(
                f"IBCN needs a fitted forecaster, or training_polls (got {training_polls}) of "
                f"at least 5 x (window + horizon) = {least}: its last fifth, held out for "
                "early stopping, must hold one window and horizon"
            )
        if forecaster is not None and not forecaster.fitted:
            raise ValueError("the forecaster IBCN is given must be fitted (call fit first)")
        self.model = forecaster or app_forecaster(
            model, model_options, window=window, horizon=horizon
        )
        # A given forecaster forecasts as far as it was built to.
        self.horizon = forecaster.horizon if forecaster is not None else horizon
        self.training_polls = training_polls if forecaster is None else 0
        self.history: list[np.ndarray] = []
        self.control_bytes = 0
        self.polls = 0
        self.rounds_predicted = 0
        self._live = False

    def on_start(self) -> None:
        if self.sim.bcn_points is None:
            raise ValueError("IBCN drives BCN congestion points; configure bcn on the network")
        ports = self.port_stats()
        switch = np.array([self.ports.kinds[n] == "switch" for n in ports["node"].tolist()])
        self._rows = np.flatnonzero(switch)
        self.points = list(
            zip(ports["node"][self._rows].tolist(), ports["port"][self._rows].tolist(), strict=True)
        )
        switches = sorted({node for node, _ in self.points})
        self._switches = len(switches)
        # Which series each congestion point follows.
        if self.series == "switch":
            column = {node: i for i, node in enumerate(switches)}
            self._series_of = np.array([column[node] for node, _ in self.points])
            self._width = len(switches)
        else:
            self._series_of = np.arange(len(self.points))
            self._width = len(self.points)
        # A forecaster fitted on one series is one model every series shares: each
        # forecast from that series' own last polls, on any network.
        self._shared = self.model.fitted and self.model.variables == 1 and self._width > 1
        if self.model.fitted and self.model.variables not in (1, self._width):
            raise ValueError(
                f"the forecaster was fitted on {self.model.variables} series but this network "
                f"has {self._width} ({self.series} series); fit it on {self._width}, or on 1 "
                "for one model every series shares"
            )
        if self._shared and not isinstance(self.model, NeuralForecaster):
            raise ValueError(
                f"a forecaster every series shares forecasts them in one batch, which "
                f"{self.model.name} cannot; give a neural forecaster, or one fitted on "
                f"{self._width} series"
            )
        self.every(self.interval, self.poll)

    def poll(self) -> None:
        per_port = self.port_stats()["queue_packets"][self._rows].astype(np.float64)
        queues = np.zeros(self._width)
        np.maximum.at(queues, self._series_of, per_port)
        self.polls += 1
        self.control_bytes += self._switches * (REQUEST_BYTES + REPLY_BYTES)
        self.history.append(queues)
        if not self.model.fitted:
            if len(self.history) >= self.training_polls:
                data = np.array(self.history)
                cut = len(data) * 4 // 5
                self.model.fit(data[:cut], data[cut:])
                self.model.reset(data[-self.model.min_context :])
                self._live = True
            return
        if self._shared:
            # A window, and the rows before it that its smoothing reads, as a series'
            # rows were smoothed when the model was fitted.
            rows = self.model.window + (self.model.smoothing or 1) - 1
            if len(self.history) < rows:
                return
            assert isinstance(self.model, NeuralForecaster)
            contexts = np.array(self.history[-rows:]).T[:, :, None]
            forecast = np.maximum(self.model.predict_batch(contexts)[:, : self.horizon, 0].T, 0.0)
            self._hand_over(forecast)
            return
        if not self._live:
            if len(self.history) < self.model.min_context:
                return
            self.model.reset(np.array(self.history[-self.model.min_context :]))
            self._live = True
        else:
            self.model.update(queues[None, :])
        self._hand_over(np.maximum(self.model.predict(self.horizon), 0.0))

    def _hand_over(self, forecast: np.ndarray) -> None:
        """Every congestion point its series' forecasts (horizon x series)."""
        self.set_bcn_predictions(
            {point: forecast[:, self._series_of[i]].tolist() for i, point in enumerate(self.points)}
        )
        self.rounds_predicted += 1
