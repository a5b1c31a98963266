"""Neural forecasters (PyTorch): the networks Diolkos and IBCN forecast with.

Diolkos forecasts each port's throughput N steps ahead from a window of BS snapshots
of every port of the switch, with Dense nets (0 or 1 hidden layers), SimpleRNN, GRU
(1–2 layers) and LSTM (1–8 layers); IBCN forecasts a switch's next k queue sizes from
its last W with LSTM, GRU, Skip-LSTM and a bidirectional LSTM. Each here is one direct
multi-output model per switch:

1. Examples: each window of `window` rows (every variable) is paired with the
   horizon × targets values lead … lead+horizon−1 rows after it (windows.py), cut
   separately from the training rows and the validation rows, so no example spans
   the boundary. fit(history, validation) uses the validation rows given (score()
   passes the Diolkos split's); fit(history) alone holds out the history's last
   quarter, Diolkos's 60:20 train:validation ratio.
2. Normalisation: the Forecaster scaling (z-score by default) fitted on the history,
   applied to inputs and targets alike; the loss is the mean squared error of
   normalised values, so every target port weighs the same whatever its load.
3. Training: Adam, early stopping on the validation error with the best epoch's
   weights restored (nets.train). `seed` fixes the initial weights and the example
   order: the same seed on the same machine gives the same predictions.
4. Forecast: one forward pass over the last `window` rows gives every step of the
   horizon at once; no forecast is fed back as an input. By default (residual=True)
   the network's outputs are added to each target's last value in the window.
   predict_batch() forecasts many switches with one model in one pass.
5. save(path) / load(path): weights, normalisation, options and the current window, as
   tensors and plain values that torch.load(..., weights_only=True) reads back.

Choices where the papers are silent:

- Output: one network per switch, one output per (step, target), all at once (direct),
  not one net per port nor forecasts fed back; the recurrent nets read the top
  layer's last hidden state, the Dense net's hidden layer is ReLU.
- Residual (default): a network forecasts the change from each target's last value.
  Traffic leaves the level range it was trained on (the forecast-recorder surge): on
  forecast-bench's isthmus-leaf0-throughput series (window 10) the plain nets had
  33–158× EWMA's MSE, the residual ones 1.6–4.2×; on the busiest-queue series and
  the three real traces the residual nets scored as well or better. On stationary
  noise the plain nets do a few percent better (they start from the mean, not from
  the last value). residual=False gives the plain nets.
- Training: Adam at its usual step size 1e-3, minibatches of 128, at most 100 epochs,
  patience 10, 32 hidden units, a window of 10 rows; early stopping judges the loss
  trained on (Skip-LSTM's budget term included). Skip-LSTM's λ defaults to 0.
- Layers: Diolkos's ranges for Dense, GRU and LSTM; RNN, BiLSTM and Skip-LSTM at most 2.

torch is imported when the first neural forecaster is made, not with this module, so
the statistical forecasters do not wait for it.
"""

from __future__ import annotations

import inspect
import math
import pickle
import re
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from isthmus.predict.arrays import matrix, whole
from isthmus.predict.base import Forecaster
from isthmus.predict.scaling import Scaler
from isthmus.predict.smoothing import MovingAverage
from isthmus.predict.windows import examples

if TYPE_CHECKING:
    import torch

    from isthmus.predict.nets import Network, Run

HELD_OUT = 0.25
"""Share of the history fit(history) holds out for early stopping when no validation
rows are given: Diolkos's 60% train / 20% validation."""

FORMAT = "isthmus.predict.neural/1"
"""Written into every saved model; load() refuses files without it."""

_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")


def _nets() -> ModuleType:
    try:
        from isthmus.predict import nets
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        raise ImportError(
            "the neural forecasters need PyTorch: pip install 'isthmus[neural]' (or torch); "
            "forecast-bench --models ewma,holt_winters,linear,arma,arar runs without it"
        ) from None
    return nets


def _ranged(value: object, field: str, low: int, high: int, why: str) -> int:
    count = whole(value, field, minimum=low, example=low)
    if count > high:
        raise ValueError(
            f"{field} must be {low}–{high} ({why}), got {count}; pass e.g. {field}={low}"
        )
    return count


def _positive(value: object, field: str, example: float, *, zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        bound = "≥ 0" if zero else "> 0"
        raise ValueError(
            f"{field} must be a number {bound}, got {value!r}; pass e.g. {field}={example}"
        )
    return float(value)


_BY_KIND: dict[str, type[NeuralForecaster]] = {}
"""Every neural forecaster by the `kind` its saved files name (filled as each class is
defined), so a file loads without a registry above this module."""


class NeuralForecaster(Forecaster):
    """What every neural forecaster takes, besides the Forecaster options (lead, horizon,
    targets, scaling, smoothing):

    window: rows each forecast reads (Diolkos's BS, IBCN's W).
    hidden: units in each hidden layer.
    residual: forecast each target as its last value in the window plus the network's
        output (True), or the network's output alone (False: the papers' plain nets).
        Neither paper says; residual is the default because traffic shifts level
        between the training rows and later ones, and a net that outputs the level
        forecasts the training level back (see "Choices" above).
    epochs: the most passes over the training examples.
    patience: epochs without a lower validation error before training stops.
    batch_size: examples per Adam step.
    learning_rate: Adam's step size.
    seed: draws the initial weights and the example order.
    device: "auto" (CUDA when torch finds a GPU, else the CPU), "cpu", "cuda" or
        "cuda:N". Predictions repeat exactly for a seed on the CPU; GPU kernels may
        round differently from run to run.
    threads: CPU threads torch may use while this model trains or predicts. 1 by
        default: these nets are small enough that splitting a product across cores
        saves little, and with a core busy elsewhere the threads wait on each other
        (an epoch measured 100× slower with 2 threads on a busy 2-core machine).

    After fit(): `network` is the torch module, `training_run` what training did
    (epochs run, best epoch, its validation error).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if isinstance(kind, str):
            _BY_KIND[kind] = cls

    def __init__(
        self,
        *,
        window: int = 10,
        hidden: int = 32,
        epochs: int = 100,
        patience: int = 10,
        batch_size: int = 128,
        learning_rate: float = 1e-3,
        seed: int = 0,
        device: str = "auto",
        threads: int = 1,
        residual: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(window=window, **options)
        self.hidden = whole(hidden, "hidden", minimum=1, example=32)
        self.epochs = whole(epochs, "epochs", minimum=1, example=100)
        self.patience = whole(patience, "patience", minimum=1, example=10)
        self.batch_size = whole(batch_size, "batch_size", minimum=1, example=128)
        self.learning_rate = _positive(learning_rate, "learning_rate", 0.001)
        self.seed = whole(seed, "seed", minimum=0, example=0)
        if not isinstance(device, str) or not _DEVICE.fullmatch(device):
            raise ValueError(
                f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}; "
                "pass e.g. device='auto'"
            )
        self.device = device
        self.threads = whole(threads, "threads", minimum=1, example=1)
        if not isinstance(residual, bool):
            raise ValueError(
                f"residual must be True or False, got {residual!r}; pass e.g. residual=True"
            )
        self.residual = residual
        # torch is imported here, with the model, so that a missing torch is reported
        # at once and its import time is not counted as training time.
        _nets()
        self.network: Network | None = None
        self.training_run: Run | None = None
        self._torch_device: torch.device | None = None
        self._context = np.zeros((0, 0))

    # What each network adds.

    @abstractmethod
    def _architecture(self) -> dict[str, int | float]:
        """The network's own settings besides `hidden`, by constructor keyword."""

    @abstractmethod
    def _network(self, nets: ModuleType, variables: int) -> Network:
        """A fresh network reading `variables` columns and forecasting self.targets."""

    # Settings, name.

    def settings(self) -> dict[str, Any]:
        """Every constructor keyword besides the Forecaster options, as plain values."""
        return {
            **self._architecture(),
            "hidden": self.hidden,
            "residual": self.residual,
            "epochs": self.epochs,
            "patience": self.patience,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "seed": self.seed,
            "device": self.device,
            "threads": self.threads,
        }

    @property
    def name(self) -> str:
        """The kind and every setting changed from its default, but device and threads,
        which change where the model runs, not what it forecasts."""
        defaults = _defaults(type(self))
        changed = [
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.settings().items()
            if k not in ("device", "threads") and v != defaults.get(k)
        ]
        return f"{self.kind}({', '.join(changed)})" if changed else self.kind

    # The Forecaster hooks; rows arrive smoothed and scaled.

    def _fit(self, data: np.ndarray) -> None:
        self._fit_validated(data, None)

    def _fit_validated(self, data: np.ndarray, validation: np.ndarray | None) -> None:
        if validation is None:
            keep = len(data) - round(len(data) * HELD_OUT)
            training, validation = data[:keep], data[keep:]
            where = (
                f"history has {len(data)} rows, of which the last {len(data) - keep} are "
                "held out for early stopping (pass validation=… to choose them)"
            )
            x, y = self._examples(training, where, "history")
            vx, vy = self._examples(validation, where, "history")
        else:
            x, y = self._examples(data, f"history has {len(data)} rows", "history")
            vx, vy = self._examples(
                validation, f"validation has {len(validation)} rows", "validation"
            )
        self._train(x, y, vx, vy, data.shape[1])
        self._context = data[-self.window :].copy()

    def _train(
        self, x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray, variables: int
    ) -> None:
        """A fresh network trained on examples (x, y), early-stopped on (vx, vy)."""
        nets = _nets()
        device = nets.device_for(self.device)
        with nets.seeded(self.seed):
            network = self._network(nets, variables).to(device)
        with nets.cpu_threads(self.threads):
            self.training_run = nets.train(
                network,
                (nets.as_tensor(x, device), nets.as_tensor(y, device)),
                (nets.as_tensor(vx, device), nets.as_tensor(vy, device)),
                epochs=self.epochs,
                patience=self.patience,
                batch_size=self.batch_size,
                learning_rate=self.learning_rate,
                seed=self.seed,
            )
        self.network, self._torch_device = network, device

    def fit_segments(
        self, history: Sequence[object], validation: Sequence[object]
    ) -> NeuralForecaster:
        """fit() on separate stretches of rows: several runs, or one series a segment
        for a model that every series shares (a switch's queue in each segment, fitted
        with one variable). No example spans two segments, each segment is smoothed from
        its own first row, and the scaling is fitted on every history row; the
        `validation` segments early-stop training only. The model then stands at the
        end of the last history segment. A segment shorter than one example adds none."""
        if isinstance(history, np.ndarray) or not len(history):
            raise ValueError("history must be a non-empty list of segments (rows x variables)")
        if isinstance(validation, np.ndarray) or not len(validation):
            raise ValueError("validation must be a non-empty list of segments (rows x variables)")
        first = matrix(history[0], "history[0]")
        segments = [
            matrix(rows, f"history[{i}]", columns=first.shape[1]) for i, rows in enumerate(history)
        ]
        held_out = [
            matrix(rows, f"validation[{i}]", columns=first.shape[1])
            for i, rows in enumerate(validation)
        ]
        self._start_fit(first.shape[1])

        def smoothed(rows: np.ndarray) -> np.ndarray:
            return MovingAverage(self.smoothing).restart(rows) if self.smoothing else rows

        seen = [smoothed(rows) for rows in segments]
        scaler = Scaler.fit(self.scaling, np.concatenate(seen))
        x, y = self._pooled([scaler.transform(rows) for rows in seen], "history")
        vx, vy = self._pooled([scaler.transform(smoothed(rows)) for rows in held_out], "validation")
        self._train(x, y, vx, vy, self._width)
        if self._smoother:
            self._smoother.restart(segments[-1])
        self._context = scaler.transform(seen[-1])[-self.window :].copy()
        self.scaler = scaler
        self._observed = len(segments[-1])
        return self

    def _pooled(self, segments: list[np.ndarray], field: str) -> tuple[np.ndarray, np.ndarray]:
        """Every segment's examples, none spanning two segments."""
        w = self.windowing
        cut = [examples(rows, w, self.targets)[:2] for rows in segments if len(rows) >= w.span]
        if not cut:
            raise ValueError(
                f"no {field} segment holds one training example of {w.span} rows (window "
                f"{w.window} + lead {w.lead} + horizon {w.horizon} − 1); give longer "
                f"segments or a smaller window"
            )
        return np.concatenate([x for x, _ in cut]), np.concatenate([y for _, y in cut])

    def _examples(self, rows: np.ndarray, where: str, field: str) -> tuple[np.ndarray, np.ndarray]:
        w = self.windowing
        if len(rows) < w.span:
            raise ValueError(
                f"{where}, too few for one training example of {w.span} rows (window "
                f"{w.window} + lead {w.lead} + horizon {w.horizon} − 1); give a longer "
                f"{field} or a smaller window"
            )
        inputs, answers, _ = examples(rows, w, self.targets)
        return inputs, answers

    def _observe(self, rows: np.ndarray) -> None:
        self._context = np.concatenate([self._context, rows])[-self.window :]

    def _restart(self, rows: np.ndarray) -> None:
        self._context = rows[-self.window :].copy()

    def _needs(self) -> int:
        return self.window

    def _forecast(self, lead: int, horizon: int) -> np.ndarray:
        if horizon > self.horizon:
            raise ValueError(
                f"{self.name} was trained to forecast {self.horizon} steps at once and "
                f"cannot extend them; ask predict({self.horizon}) or fewer, or refit "
                f"with horizon={horizon}"
            )
        # `lead` is always the one the network was trained for: its outputs are those steps.
        return self._run(self._context[None])[0, :horizon]

    def _run(self, windows: np.ndarray) -> np.ndarray:
        """(n × window × variables) smoothed, scaled windows → (n × horizon × targets)."""
        import torch

        nets = _nets()
        assert self.network is not None and self._torch_device is not None
        with torch.inference_mode(), nets.cpu_threads(self.threads):
            x = torch.as_tensor(windows, dtype=torch.float32, device=self._torch_device)
            forecasts, _ = self.network(x)
        return forecasts.cpu().numpy().astype(np.float64)

    # Many switches at once.

    def predict_batch(self, contexts: object) -> np.ndarray:
        """Forecasts (switches × horizon × targets) for many switches in one forward
        pass of this one model. contexts: (switches × rows × variables), each switch's
        latest rows oldest first, at least `window` of them. Each switch's rows are read
        as reset(its rows) would read them (smoothed from their first row, scaled with
        the training statistics), so the forecasts are those of reset() then predict()
        per switch, up to float32 rounding; the model's own state is left as it was."""
        windows = self._windows(contexts, "contexts")[:, -self.window :]
        assert self.scaler is not None
        return self.scaler.inverse(self._run(windows), self.targets)

    @staticmethod
    def predict_many(models: list[NeuralForecaster]) -> list[np.ndarray]:
        """Each model's predict(), from the state each keeps (one switch's model each,
        say), with every group of Dense nets of one shape on the CPU run as one batched
        product per layer instead of one forward pass per model; the rest one by one."""
        import torch

        groups: dict[tuple, list[int]] = {}
        answers: list[np.ndarray | None] = [None] * len(models)
        for i, model in enumerate(models):
            ready = model.fitted and model._observed >= model.min_context
            if isinstance(model, Dense) and ready and model._torch_device == torch.device("cpu"):
                shape = (
                    model.window,
                    model.variables,
                    model.hidden_layers,
                    model.hidden,
                    model.horizon,
                    tuple(model.targets),
                    model.residual,
                )
                groups.setdefault(shape, []).append(i)
            else:
                answers[i] = model.predict()
        nets = _nets()
        for members in groups.values():
            chosen = [models[i] for i in members]
            windows = np.stack([m._context for m in chosen])
            with torch.inference_mode(), nets.cpu_threads(chosen[0].threads):
                out = nets.dense_forward_many(
                    [m.network for m in chosen], torch.as_tensor(windows, dtype=torch.float32)
                )
            for i, model, forecast in zip(members, chosen, out.numpy(), strict=True):
                assert model.scaler is not None
                answers[i] = model.scaler.inverse(forecast.astype(np.float64), model.targets)
        return [a for a in answers if a is not None]

    def _windows(self, contexts: object, field: str) -> np.ndarray:
        """(switches × rows × variables) as the model reads them: smoothed (by a
        smoother of its own, leaving the model's streaming one alone) and scaled."""
        if not self.fitted:
            raise ValueError(f"{self.name} is not fitted; call fit(history) first")
        try:
            data = np.asarray(contexts, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{field} must be numbers, switches × rows × variables; convert it with "
                "numpy.asarray(..., dtype=float)"
            ) from None
        if data.ndim != 3 or data.shape[0] == 0 or data.shape[2] != self._width:
            raise ValueError(
                f"{field} must be switches × rows × {self._width} variables, got shape "
                f"{data.shape}; stack each switch's rows, e.g. numpy.stack(windows)"
            )
        if data.shape[1] < self.window:
            raise ValueError(
                f"{field} has {data.shape[1]} rows per switch but {self.name} reads a window "
                f"of {self.window}; give at least {self.window}"
            )
        if not np.all(np.isfinite(data)):
            switch, row, col = np.argwhere(~np.isfinite(data))[0]
            raise ValueError(
                f"{field}: switch {switch} row {row} column {col} is {data[switch, row, col]}; "
                "fill or drop missing and infinite values first"
            )
        switches, rows, width = data.shape
        if self.smoothing:
            # Columns smooth independently, so every switch's columns side by side
            # smooth in one call.
            flat = data.transpose(1, 0, 2).reshape(rows, switches * width)
            smoothed = MovingAverage(self.smoothing).restart(flat)
            data = smoothed.reshape(rows, switches, width).transpose(1, 0, 2)
        assert self.scaler is not None
        return self.scaler.transform(data)

    # Saving and loading.

    def save(self, path: str | Path) -> None:
        """Write the fitted model and its current state (the window it would forecast
        from) to `path`, for load()."""
        import torch

        if not self.fitted or self.network is None:
            raise ValueError(f"{self.name} is not fitted; call fit(history) before save()")
        assert self.scaler is not None and self.training_run is not None
        # The smoother's tail holds the raw rows its running mean still needs; saved, a
        # loaded model streams on exactly as this one would.
        tail = self._smoother._tail if self._smoother else None
        payload = {
            "format": FORMAT,
            "kind": self.kind,
            "options": {
                "window": self.window,
                "lead": self.lead,
                "horizon": self.horizon,
                "targets": self._targets_option,
                "scaling": self.scaling,
                "smoothing": self.smoothing,
            },
            "settings": self.settings(),
            "state": {
                "targets": self.targets,
                "width": self._width,
                "offset": torch.from_numpy(np.array(self.scaler.offset, dtype=np.float64)),
                "scale": torch.from_numpy(np.array(self.scaler.scale, dtype=np.float64)),
                "context": torch.from_numpy(self._context.copy()),
                "observed": self._observed,
                "smoothing_tail": None if tail is None else torch.from_numpy(tail.copy()),
            },
            "training_run": vars(self.training_run).copy(),
            "weights": {k: v.detach().cpu() for k, v in self.network.state_dict().items()},
        }
        torch.save(payload, Path(path))

    @classmethod
    def load(cls, path: str | Path, *, device: str | None = None) -> NeuralForecaster:
        """A model written by save(), ready to predict() exactly as it would have.
        device: where to run it; None keeps the saved setting. Called on a subclass
        (Gru.load), the file must hold that kind."""
        import torch

        nets = _nets()
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"model file '{path}' does not exist; give a path written by save()")
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as e:
            raise ValueError(
                f"'{path}' is not a model file torch can read safely ({e}); give a path "
                "written by save()"
            ) from None
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise ValueError(f"'{path}' was not written by save(); give a path written by save()")
        kind = payload["kind"]
        model_class = _BY_KIND.get(kind)
        if not (isinstance(model_class, type) and issubclass(model_class, cls)):
            raise ValueError(
                f"'{path}' holds a {kind} model, not a {cls.__name__}; load it with "
                "NeuralForecaster.load(path)"
            )
        settings = dict(payload["settings"])
        if device is not None:
            settings["device"] = device
        model = model_class(**payload["options"], **settings)
        state = payload["state"]
        model.targets = list(state["targets"])
        model._width = int(state["width"])
        model._context = state["context"].numpy().copy()
        model._observed = int(state["observed"])
        if model.smoothing:
            model._smoother = MovingAverage(model.smoothing)
            model._smoother._tail = state["smoothing_tail"].numpy().copy()
        model._torch_device = nets.device_for(model.device)
        network = model._network(nets, model._width)
        network.load_state_dict(payload["weights"])
        model.network = network.to(model._torch_device).eval()
        model.training_run = nets.Run(**payload["training_run"])
        model.scaler = Scaler(state["offset"].numpy().copy(), state["scale"].numpy().copy())
        return model


def _defaults(model_class: type) -> dict[str, Any]:
    """Each constructor keyword's default, read from the signatures themselves so a
    default is written in one place."""
    found: dict[str, Any] = {}
    for klass in reversed(model_class.__mro__):
        init = vars(klass).get("__init__")
        if init is not None and issubclass(klass, NeuralForecaster):
            for p in inspect.signature(init).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    found[p.name] = p.default
    return found


class Dense(NeuralForecaster):
    """Diolkos's Dense net: the window of every variable, flattened, through
    `hidden_layers` (0 or 1) ReLU layers of `hidden` units to one output per step and
    target. With 0 hidden layers it is a linear autoregression on the whole switch."""

    kind = "dense"

    def __init__(self, *, hidden_layers: int = 1, **options: Any) -> None:
        super().__init__(**options)
        self.hidden_layers = _ranged(
            hidden_layers, "hidden_layers", 0, 1, "Diolkos's Dense nets have 0 or 1"
        )

    def _architecture(self) -> dict[str, int | float]:
        return {"hidden_layers": self.hidden_layers}

    def _network(self, nets: ModuleType, variables: int) -> Network:
        return nets.DenseNet(
            self.window,
            variables,
            self.horizon,
            self.targets,
            residual=self.residual,
            hidden_layers=self.hidden_layers,
            hidden=self.hidden,
        )


class Recurrent(NeuralForecaster):
    """A stack of `layers` recurrent layers of `hidden` units read over the window; the
    top layer's last hidden state gives one output per step and target."""

    cell: ClassVar[str]
    bidirectional: ClassVar[bool] = False
    most_layers: ClassVar[tuple[int, str]]  # (layers, where that limit comes from)

    def __init__(self, *, layers: int = 1, **options: Any) -> None:
        super().__init__(**options)
        most, why = self.most_layers
        self.layers = _ranged(layers, "layers", 1, most, why)

    def _architecture(self) -> dict[str, int | float]:
        return {"layers": self.layers}

    def _network(self, nets: ModuleType, variables: int) -> Network:
        return nets.RecurrentNet(
            self.cell,
            variables,
            self.horizon,
            self.targets,
            residual=self.residual,
            layers=self.layers,
            hidden=self.hidden,
            bidirectional=self.bidirectional,
        )


class Rnn(Recurrent):
    """Diolkos's SimpleRNN: Elman layers, h_t = tanh(W x_t + U h_{t−1} + b)."""

    kind = "rnn"
    cell = "rnn"
    most_layers = (2, "as deep as the GRUs Diolkos compares")


class Gru(Recurrent):
    """GRU layers (Diolkos: 1–2 layers; IBCN)."""

    kind = "gru"
    cell = "gru"
    most_layers = (2, "Diolkos's GRUs have 1 or 2")


class Lstm(Recurrent):
    """LSTM layers (Diolkos: 1–8 layers; IBCN)."""

    kind = "lstm"
    cell = "lstm"
    most_layers = (8, "Diolkos's LSTMs have 1 to 8")


class BiLstm(Recurrent):
    """IBCN's bidirectional LSTM: each layer reads the window forwards and backwards;
    the forecast reads the top layer's forward state after the newest row and its
    backward state after the oldest."""

    kind = "bilstm"
    cell = "lstm"
    bidirectional = True
    most_layers = (2, "as deep as the GRUs Diolkos compares")


class SkipLstm(NeuralForecaster):
    """IBCN's Skip-LSTM (Campos et al., ICLR 2018; the algorithm is in skip_lstm.py): an
    LSTM of `layers` (1 or 2) layers that learns at which rows of the window to update
    its state. budget: λ, the training loss added per state update and window; larger
    values make it update less often."""

    kind = "skip_lstm"

    def __init__(self, *, layers: int = 1, budget: float = 0.0, **options: Any) -> None:
        super().__init__(**options)
        self.layers = _ranged(layers, "layers", 1, 2, "as deep as the GRUs Diolkos compares")
        self.budget = _positive(budget, "budget", 0.01, zero=True)

    def _architecture(self) -> dict[str, int | float]:
        return {"layers": self.layers, "budget": self.budget}

    def _network(self, nets: ModuleType, variables: int) -> Network:
        from isthmus.predict.skip_lstm import SkipLSTMNet

        return SkipLSTMNet(
            variables,
            self.horizon,
            self.targets,
            residual=self.residual,
            layers=self.layers,
            hidden=self.hidden,
            budget=self.budget,
        )

    def update_rate(self, rows: object) -> float:
        """The mean of the update decisions u_t over every step of every full window of
        `rows` (rows × variables, data units, read as reset(rows) reads them): the share
        of rows at which the state was updated."""
        import torch

        if not self.fitted:
            raise ValueError(f"{self.name} is not fitted; call fit(history) first")
        seen = self._windows(matrix(rows, "rows", columns=self._width)[None], "rows")[0]
        windows = np.lib.stride_tricks.sliding_window_view(seen, self.window, axis=0)
        assert self.network is not None
        with torch.inference_mode(), _nets().cpu_threads(self.threads):
            # sliding_window_view gives a read-only view; torch wants its own copy.
            steps = np.ascontiguousarray(windows.transpose(0, 2, 1))
            x = torch.as_tensor(steps, dtype=torch.float32, device=self._torch_device)
            _, updates = self.network.gated(x)
        return float(updates.mean())
