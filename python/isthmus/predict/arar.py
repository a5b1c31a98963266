"""ARAR (Brockwell & Davis, "Introduction to Time Series and Forecasting", §9.1):
shorten the series' memory with one to three simple filters, then fit a four-term
subset autoregression to what is left.

1. Memory shortening. On the current series Y (length n), for each lag tau = 1 … 15
   take phi(tau) = Σ Y_t Y_{t−tau} / Σ Y_{t−tau}², the least-squares fit of Y_t on
   Y_{t−tau}, and Err(tau) = Σ (Y_t − phi(tau) Y_{t−tau})² / Σ Y_t²; let tau* minimise
   Err.
   - If Err(tau*) ≤ 8/n, or phi(tau*) ≥ 0.93 with tau* > 2: replace Y by
     Y_t − phi(tau*) Y_{t−tau*}.
   - Else if phi(tau*) ≥ 0.93 (tau* is 1 or 2): replace Y by
     Y_t − phi_1 Y_{t−1} − phi_2 Y_{t−2}, phi_1, phi_2 by least squares.
   - Else Y is short-memory: stop. At most three filters are applied.
   The filters compose into psi(B) = 1 + psi_1 B + … + psi_k B^k, and S = psi(B) Y.
2. Subset AR. With X = S − mean(S) and its sample autocorrelations rho, for every
   lag set 1 < i < j < l ≤ m (m = 26 by default) solve the Yule-Walker equations
   for the model X_t = phi_1 X_{t−1} + phi_i X_{t−i} + phi_j X_{t−j} + phi_l X_{t−l} + Z_t
   and keep the set whose white-noise variance
   sigma² = gamma(0)·(1 − phi_1 rho(1) − phi_i rho(i) − phi_j rho(j) − phi_l rho(l)) is least.
3. Forecast. With phi(B) = 1 − phi_1 B − phi_i B^i − phi_j B^j − phi_l B^l and
   xi(B) = psi(B) phi(B), the series obeys
   Y_t = −Σ_{r=1}^{k+l} xi_r Y_{t−r} + phi(1)·mean(S) + Z_t; forecasts run this
   recursion with Z = 0 and forecasts standing in for unseen values.

ARAR is applied to the raw series by default (scaling=None): its persistence test
divides by Σ Y², not by the variance, so it is meant to see the series' level.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from isthmus.predict.arrays import whole
from isthmus.predict.base import UnivariateForecaster
from isthmus.predict.scaling import Scaling

MAX_TAU = 15
MAX_FILTERS = 3
LONG_MEMORY_PHI = 0.93


def shortening_filter(y: np.ndarray) -> np.ndarray | None:
    """The next memory-shortening filter for y as [1, c_1, …, c_r] (applied as
    Σ c_r y_{t−r}), or None when y is short-memory."""
    n = len(y)
    best: tuple[float, int, float] | None = None
    for tau in range(1, min(MAX_TAU, n - 2) + 1):
        now, before = y[tau:], y[:-tau]
        if before @ before == 0 or now @ now == 0:
            continue
        phi = (now @ before) / (before @ before)
        err = float(np.sum((now - phi * before) ** 2) / (now @ now))
        if best is None or err < best[0]:
            best = (err, tau, float(phi))
    if best is None:
        return None
    err, tau, phi = best
    if err <= 8 / n or (phi >= LONG_MEMORY_PHI and tau > 2):
        filt = np.zeros(tau + 1)
        filt[0], filt[tau] = 1.0, -phi
        return filt
    if phi >= LONG_MEMORY_PHI:
        design = np.column_stack([y[1:-1], y[:-2]])
        (phi_1, phi_2), *_ = np.linalg.lstsq(design, y[2:], rcond=None)
        return np.array([1.0, -phi_1, -phi_2])
    return None


def apply_filter(y: np.ndarray, filt: np.ndarray) -> np.ndarray:
    """Σ_r filt[r]·y[t−r] for every t with a full past (the first len(filt)−1 dropped)."""
    k = len(filt) - 1
    return sum(filt[r] * y[k - r : len(y) - r] for r in range(k + 1))


def autocovariances(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocovariances gamma(0 … max_lag), divided by n as in Brockwell & Davis."""
    n = len(x)
    return np.array([x[: n - h] @ x[h:] / n for h in range(max_lag + 1)])


def best_subset(rho: np.ndarray, max_lag: int) -> tuple[tuple[int, ...], np.ndarray, float]:
    """Lags (1, i, j, l), their Yule-Walker coefficients and sigma²/gamma(0) for the set
    with the least white-noise variance."""
    lag_sets = np.array([(1, *c) for c in itertools.combinations(range(2, max_lag + 1), 3)])
    gaps = np.abs(lag_sets[:, :, None] - lag_sets[:, None, :])
    matrices = rho[gaps]
    rights = rho[lag_sets]
    # A lag set whose autocorrelation matrix is singular cannot be solved; it is
    # dropped by giving it an infinite variance rather than failing the whole search.
    usable = np.abs(np.linalg.det(matrices)) > 1e-12
    coefs = np.zeros_like(rights)
    coefs[usable] = np.linalg.solve(matrices[usable], rights[usable][..., None])[..., 0]
    variance = np.where(usable, 1 - np.sum(coefs * rights, axis=1), np.inf)
    best = int(np.argmin(variance))
    return tuple(int(v) for v in lag_sets[best]), coefs[best], float(variance[best])


class ArarModel:
    def __init__(self, max_lag: int) -> None:
        self.max_lag = max_lag
        self.shortening = np.ones(1)  # psi: 1, psi_1, …, psi_k
        self.lags: tuple[int, ...] = (1, 2, 3, 4)
        self.coefficients = np.zeros(4)
        self.sigma2 = 0.0
        self.mean = 0.0  # of the shortened series
        self.xi = np.ones(1)
        self.constant = 0.0
        self._tail = np.zeros(0)

    @property
    def needs(self) -> int:
        return len(self.xi) - 1

    def fit(self, y: np.ndarray) -> None:
        least = 4 * self.max_lag + MAX_FILTERS * MAX_TAU
        if len(y) < least:
            raise ValueError(
                f"history has {len(y)} rows; ARAR with max_lag={self.max_lag} needs at "
                f"least {least}; give a longer history or a smaller max_lag (e.g. 13)"
            )
        shortened, psi = y, np.ones(1)
        for _ in range(MAX_FILTERS):
            filt = shortening_filter(shortened)
            if filt is None:
                break
            shortened = apply_filter(shortened, filt)
            psi = np.convolve(psi, filt)
        self.shortening = psi
        self.mean = float(shortened.mean())
        gamma = autocovariances(shortened - self.mean, self.max_lag)
        if gamma[0] > 0:
            self.lags, self.coefficients, ratio = best_subset(gamma / gamma[0], self.max_lag)
            self.sigma2 = gamma[0] * ratio
        else:
            # The filters left a constant: nothing is left to regress, and the
            # shortening filter alone carries the forecast.
            self.lags, self.coefficients, self.sigma2 = (1, 2, 3, 4), np.zeros(4), 0.0
        phi = np.zeros(self.lags[-1] + 1)
        phi[0] = 1.0
        phi[list(self.lags)] = -self.coefficients
        self.xi = np.convolve(psi, phi)
        self.constant = float((1 - self.coefficients.sum()) * self.mean)
        self.restart(y)

    def restart(self, y: np.ndarray) -> None:
        self._tail = y[len(y) - self.needs :].copy()

    def observe(self, y: np.ndarray) -> None:
        self._tail = np.concatenate([self._tail, y])[len(self._tail) + len(y) - self.needs :]

    def forecast(self, steps: int) -> np.ndarray:
        k = self.needs
        reversed_xi = self.xi[1:][::-1]  # xi_k … xi_1, to line up with oldest … newest
        values = np.concatenate([self._tail, np.zeros(steps)])
        for h in range(steps):
            values[k + h] = self.constant - reversed_xi @ values[h : k + h]
        return values[k:]


class Arar(UnivariateForecaster):
    """max_lag: the largest lag m the subset autoregression may use (Brockwell & Davis
    use 13 or 26). Plus the Forecaster options; scaling defaults to None here (see the
    module docstring)."""

    kind = "arar"

    def __init__(
        self, *, max_lag: int = 26, scaling: Scaling | None = None, **options: Any
    ) -> None:
        super().__init__(scaling=scaling, **options)
        self.max_lag = whole(max_lag, "max_lag", minimum=4, example=26)

    @property
    def name(self) -> str:
        return self.kind if self.max_lag == 26 else f"arar(max_lag={self.max_lag})"

    def _new_model(self) -> ArarModel:
        return ArarModel(self.max_lag)
