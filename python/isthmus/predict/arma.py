"""ARMA(p, q): an autoregressive moving-average model, fitted by statsmodels and run
online here.

1. fit() estimates the mean mu, AR coefficients phi_1..p and MA coefficients
   theta_1..q by exact maximum likelihood (statsmodels' ARIMA with order (p, 0, q)
   and a constant; stationarity and invertibility enforced).
2. The state is the last p deviations x = y − mu and the last q innovations e,
   rebuilt from the data with e_t = x_t − Σ phi_i x_{t−i} − Σ theta_j e_{t−j}, taking
   values before the first row as the mean and their innovations as 0.
3. h steps ahead: x̂ = Σ phi_i x_{t+h−i} + Σ theta_j e_{t+h−j}, with forecasts standing
   in for unseen x and 0 for unseen e; the forecast is mu + x̂.
The parameters stay fixed between fits, so update() and predict() cost a few
multiplications, not a likelihood evaluation.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from isthmus.predict.arrays import whole
from isthmus.predict.base import UnivariateForecaster


def _arima():
    # Imported on first use: statsmodels takes about a second to import, which only
    # ARMA users should pay.
    from statsmodels.tsa.arima.model import ARIMA

    return ARIMA


class ArmaModel:
    def __init__(self, p: int, q: int) -> None:
        self.p, self.q = p, q
        self.mean = 0.0
        self.ar = np.zeros(p)
        self.ma = np.zeros(q)
        self.converged = True
        """Whether the last fit's likelihood optimisation converged."""
        self._x: list[float] = [0.0] * p  # newest last
        self._e: list[float] = [0.0] * q

    @property
    def needs(self) -> int:
        return max(self.p, 1)

    def fit(self, y: np.ndarray) -> None:
        least = 2 * (self.p + self.q) + 10
        if len(y) < least:
            raise ValueError(
                f"history has {len(y)} rows; fitting ARMA({self.p},{self.q}) needs at "
                f"least {least}; give a longer history or a smaller order"
            )
        # The likelihood is a Kalman filter over matrices of side about p+q: BLAS threads
        # cannot speed that up, and on a busy machine they spin waiting for cores and make
        # a 0.2 s fit take 10 s or more.
        with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
            # statsmodels falls back to zero starting values when its preliminary
            # estimate is non-stationary and says so; the fit itself is unaffected.
            warnings.filterwarnings("ignore", message="Non-stationary starting")
            warnings.filterwarnings("ignore", message="Non-invertible starting")
            # A fit stopped at its iteration limit still gives usable estimates; it is
            # recorded in `converged` rather than printed into the user's output.
            warnings.filterwarnings("ignore", message="Maximum Likelihood optimization")
            result = _arima()(y, order=(self.p, 0, self.q), trend="c").fit()
        self.converged = bool(result.mle_retvals.get("converged", True))
        params = dict(zip(result.model.param_names, np.asarray(result.params), strict=True))
        self.mean = float(params["const"])
        self.ar = np.array([params[f"ar.L{i}"] for i in range(1, self.p + 1)])
        self.ma = np.array([params[f"ma.L{j}"] for j in range(1, self.q + 1)])
        self.restart(y)

    def restart(self, y: np.ndarray) -> None:
        self._x = [0.0] * self.p
        self._e = [0.0] * self.q
        self.observe(y)

    def observe(self, y: np.ndarray) -> None:
        ar, ma = self.ar.tolist(), self.ma.tolist()
        x_hist, e_hist = self._x, self._e
        for value in (y - self.mean).tolist():
            fitted = sum(a * x_hist[-1 - i] for i, a in enumerate(ar))
            fitted += sum(m * e_hist[-1 - j] for j, m in enumerate(ma))
            x_hist.append(value)
            e_hist.append(value - fitted)
        self._x = x_hist[len(x_hist) - self.p :] if self.p else []
        self._e = e_hist[len(e_hist) - self.q :] if self.q else []

    def forecast(self, steps: int) -> np.ndarray:
        x_hist, e_hist = list(self._x), list(self._e)
        ar, ma = self.ar.tolist(), self.ma.tolist()
        out = []
        for _ in range(steps):
            value = sum(a * x_hist[-1 - i] for i, a in enumerate(ar))
            value += sum(m * e_hist[-1 - j] for j, m in enumerate(ma))
            x_hist.append(value)
            e_hist.append(0.0)
            out.append(value)
        return np.array(out) + self.mean


class Arma(UnivariateForecaster):
    """p, q: the AR and MA orders (default ARMA(2,1)). Plus the Forecaster options."""

    kind = "arma"

    def __init__(self, *, p: int = 2, q: int = 1, **options: Any) -> None:
        super().__init__(**options)
        self.p = whole(p, "p", minimum=0, example=2)
        self.q = whole(q, "q", minimum=0, example=1)
        if self.p + self.q == 0:
            raise ValueError("ARMA(0,0) forecasts only the mean; give p ≥ 1 or q ≥ 1")
        _arima()  # the import happens here, so a timed fit() times only the fit

    @property
    def name(self) -> str:
        return f"arma({self.p},{self.q})"

    def _new_model(self) -> ArmaModel:
        return ArmaModel(self.p, self.q)
