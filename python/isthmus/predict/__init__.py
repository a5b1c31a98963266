"""Forecasting for learning-augmented traffic control, independent of the simulator.

Diolkos forecasts each port's throughput N steps ahead from a window of BS past
snapshots of all the switch's ports; IBCN forecasts a switch's next k queue sizes from
its last W. Both fit the same shape: a `Forecaster` fitted on a (timesteps × variables)
history, updated online, asked for horizon × targets values `lead` steps ahead.

- base.py: the Forecaster interface; windows.py: which rows an example reads and
  answers; scaling.py, smoothing.py: the normalisation and moving average applied to
  what a model reads.
- ewma.py, holt_winters.py, linear.py, arma.py, arar.py: statistical forecasters.
- neural.py: the neural forecasters (Dense, RNN, GRU, LSTM, Skip-LSTM, BiLSTM) on
  PyTorch; nets.py, skip_lstm.py: their networks and training loop (torch is imported
  only when a network is built).
- replay.py: ReplayDB, a switch's bounded, time-ordered store of snapshots;
  splits.py: Diolkos's chronological test/train/validation split.
- metrics.py: MAE/SDAE (percent), IBCN's average relative error, MSE.
- scoring.py: score() several models on one series (forecast_test(): their forecasts);
  series.py: load a CSV column or a shipped trace.
"""

from isthmus.predict.arar import Arar
from isthmus.predict.arma import Arma
from isthmus.predict.base import (
    Forecaster,
    SeriesModel,
    StatelessForecaster,
    UnivariateForecaster,
)
from isthmus.predict.ewma import Ewma
from isthmus.predict.holt_winters import HoltWinters
from isthmus.predict.linear import LinearFit
from isthmus.predict.metrics import (
    average_relative_error,
    mae_pct,
    mse,
    relative_errors,
    sdae_pct,
)
from isthmus.predict.models import MODELS, make
from isthmus.predict.neural import (
    BiLstm,
    Dense,
    Gru,
    Lstm,
    NeuralForecaster,
    Rnn,
    SkipLstm,
)
from isthmus.predict.replay import ReplayDB, Segments
from isthmus.predict.scaling import Scaler
from isthmus.predict.scoring import TestForecasts, forecast_test, score
from isthmus.predict.series import bundled_traces, load_column, load_trace
from isthmus.predict.smoothing import MovingAverage, moving_average
from isthmus.predict.splits import DIOLKOS_SPLIT, Split, split_rows
from isthmus.predict.windows import Windowing, examples

__all__ = [
    "DIOLKOS_SPLIT",
    "MODELS",
    "Arar",
    "Arma",
    "BiLstm",
    "Dense",
    "Ewma",
    "Forecaster",
    "Gru",
    "HoltWinters",
    "LinearFit",
    "Lstm",
    "MovingAverage",
    "NeuralForecaster",
    "ReplayDB",
    "Rnn",
    "Scaler",
    "Segments",
    "SeriesModel",
    "SkipLstm",
    "Split",
    "StatelessForecaster",
    "TestForecasts",
    "UnivariateForecaster",
    "Windowing",
    "average_relative_error",
    "bundled_traces",
    "examples",
    "forecast_test",
    "load_column",
    "load_trace",
    "mae_pct",
    "make",
    "moving_average",
    "mse",
    "relative_errors",
    "score",
    "sdae_pct",
    "split_rows",
]
