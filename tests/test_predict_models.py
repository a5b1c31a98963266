"""The statistical forecasters: each recovers a known signal, ARMA and ARAR agree with
reference fits on a simulated AR(2), and every model keeps the Forecaster contract."""

import functools

import numpy as np
import pytest

from isthmus.predict import (
    MODELS,
    Arar,
    Arma,
    BiLstm,
    Dense,
    Ewma,
    Gru,
    HoltWinters,
    LinearFit,
    Lstm,
    NeuralForecaster,
    Rnn,
    SkipLstm,
)
from isthmus.predict.arar import apply_filter

NOISE = 0.2  # standard deviation of the noise on every synthetic signal
PERIOD = 24


def flat(t):
    return 5 + 0 * t


def line(t):
    return 5 + 0.2 * t


def seasonal(t):
    return 10 + 0.01 * t + 2 * np.sin(2 * np.pi * t / PERIOD)


def stationary_seasonal(t):
    return 10 + 2 * np.sin(2 * np.pi * t / PERIOD)


# (forecaster, signal, rows fitted, mean |forecast − signal| allowed over the horizon).
# Bounds are in units of the noise: a model that has the signal's shape errs by about
# the noise it cannot see through; one that missed the shape would be off by the
# seasonal amplitude (10 NOISE) or the trend's drift over the horizon.
RECOVERY = [
    pytest.param(functools.partial(Ewma, horizon=10), flat, 300, 0.25 * NOISE, id="ewma/flat"),
    pytest.param(
        functools.partial(HoltWinters, horizon=10), line, 300, 0.5 * NOISE, id="holt/line"
    ),
    pytest.param(
        functools.partial(LinearFit, window=50, horizon=10),
        line,
        300,
        0.5 * NOISE,
        id="linear/line",
    ),
    pytest.param(
        functools.partial(HoltWinters, season=PERIOD, horizon=PERIOD),
        seasonal,
        480,
        NOISE,
        id="holt_winters/seasonal",
    ),
    pytest.param(
        functools.partial(Arar, horizon=PERIOD), seasonal, 480, 2 * NOISE, id="arar/seasonal"
    ),
    pytest.param(
        functools.partial(Arma, p=2, q=1, horizon=PERIOD),
        stationary_seasonal,
        480,
        2 * NOISE,
        id="arma/seasonal",
        # A sine is an AR(2) whose roots lie on the unit circle, the edge of the
        # stationary region the likelihood search is confined to; the optimiser stops
        # there short of its tolerance and says so. The forecast is still the sine.
        marks=pytest.mark.filterwarnings(
            "ignore::statsmodels.tools.sm_exceptions.ConvergenceWarning"
        ),
    ),
]


@pytest.mark.parametrize("make,signal,rows,bound", RECOVERY)
def test_forecaster_recovers_a_known_signal(make, signal, rows, bound):
    t = np.arange(rows, dtype=float)
    noisy = signal(t) + np.random.default_rng(7).normal(0, NOISE, rows)
    model = make()
    forecast = model.fit(noisy).predict()[:, 0]
    future = signal(np.arange(rows, rows + model.horizon, dtype=float))
    assert np.mean(np.abs(forecast - future)) < bound


def test_ewma_averages_noise_and_follows_a_level_shift():
    rng = np.random.default_rng(2)
    noise = Ewma().fit(5 + rng.normal(0, NOISE, 500))
    assert noise.per_target[0].alpha < 0.1  # white noise: lean on the long average
    steps = np.r_[np.full(100, 5.0), np.full(100, 8.0)] + rng.normal(0, 0.01, 200)
    shifted = Ewma().fit(steps)
    assert shifted.per_target[0].alpha > 0.5  # a clean level: trust the newest value
    assert shifted.predict()[0, 0] == pytest.approx(8, abs=0.03)


def test_holt_winters_without_noise_is_exact():
    t = np.arange(200.0)
    model = HoltWinters(season=PERIOD, horizon=PERIOD).fit(seasonal(t))
    np.testing.assert_allclose(model.predict()[:, 0], seasonal(np.arange(200.0, 224)), atol=1e-6)


def simulated_ar2(n=2000, phi=(0.6, -0.3), seed=1):
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=n + 200)
    y = np.zeros(n + 200)
    for t in range(2, n + 200):
        y[t] = phi[0] * y[t - 1] + phi[1] * y[t - 2] + noise[t]
    return y[200:]  # the first 200 steps let the start-up transient die out


@pytest.fixture(scope="module")
def ar2_reference():
    from statsmodels.tsa.ar_model import AutoReg

    y = simulated_ar2()
    return y, AutoReg(y, lags=2, trend="c").fit()


def test_arma_matches_the_true_and_the_reference_ar2(ar2_reference):
    y, reference = ar2_reference
    model = Arma(p=2, q=0, horizon=5, scaling=None).fit(y)
    fitted = model.per_target[0]
    np.testing.assert_allclose(fitted.ar, [0.6, -0.3], atol=0.05)
    np.testing.assert_allclose(fitted.ar, reference.params[1:], atol=0.01)
    np.testing.assert_allclose(model.predict()[:, 0], reference.forecast(5), atol=0.01)


def test_arar_matches_the_true_and_the_reference_ar2(ar2_reference):
    y, reference = ar2_reference
    model = Arar(horizon=5).fit(y)
    fitted = model.per_target[0]
    np.testing.assert_array_equal(fitted.shortening, [1.0])  # short memory: no filter
    assert fitted.lags[:2] == (1, 2)
    np.testing.assert_allclose(fitted.coefficients[:2], [0.6, -0.3], atol=0.05)
    np.testing.assert_allclose(fitted.coefficients[:2], reference.params[1:], atol=0.02)
    assert np.all(np.abs(fitted.coefficients[2:]) < 0.06)  # the spare lags stay near 0
    assert fitted.sigma2 == pytest.approx(1.0, abs=0.1)  # the simulated noise variance
    np.testing.assert_allclose(model.predict()[:, 0], reference.forecast(5), atol=0.1)


def test_arar_one_step_errors_have_the_fitted_variance(ar2_reference):
    y, _ = ar2_reference
    model = Arar().fit(y[:1000])
    errors = []
    for t in range(1000, 2000):
        errors.append(y[t] - model.predict()[0, 0])
        model.update(y[t])
    assert np.var(errors) == pytest.approx(model.per_target[0].sigma2, rel=0.15)


def test_arar_shortens_a_random_walk_by_differencing():
    walk = np.cumsum(np.random.default_rng(3).normal(size=2000))
    fitted = Arar().fit(walk).per_target[0]
    assert len(fitted.shortening) == 2
    assert fitted.shortening[1] == pytest.approx(-1, abs=0.01)
    np.testing.assert_allclose(apply_filter(np.arange(6.0), np.array([1.0, -1.0])), np.ones(5))


def test_arma_runs_online_exactly_as_statsmodels_does():
    from statsmodels.tsa.arima.model import ARIMA
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(5)
    noise = rng.normal(size=2100)
    y = np.zeros(2100)
    for t in range(1, 2100):
        y[t] = 0.7 * y[t - 1] + noise[t] + 0.4 * noise[t - 1]
    y = y[100:] + 3
    model = Arma(p=1, q=1, horizon=5, scaling=None).fit(y[:1500])
    with threadpool_limits(limits=1, user_api="blas"):  # as Arma does, for speed
        reference = ARIMA(y[:1500], order=(1, 0, 1), trend="c").fit()
    np.testing.assert_allclose(model.predict()[:, 0], reference.forecast(5), atol=1e-6)
    model.update(y[1500:1600])
    np.testing.assert_allclose(
        model.predict()[:, 0], reference.append(y[1500:1600]).forecast(5), atol=1e-6
    )


# The contract every registered model keeps, on a two-column series forecasting column 1.
# The neural nets are tiny and barely trained: the contract is about state, not skill.
TINY = {"hidden": 4, "epochs": 2}
CONTRACT = {
    "ewma": Ewma,
    "holt_winters": functools.partial(HoltWinters, season=PERIOD),
    "linear": LinearFit,
    "arma": functools.partial(Arma, p=1, q=0),
    "arar": functools.partial(Arar, max_lag=13),
    "dense": functools.partial(Dense, **TINY),
    "rnn": functools.partial(Rnn, **TINY),
    "gru": functools.partial(Gru, **TINY),
    "lstm": functools.partial(Lstm, **TINY),
    "skip_lstm": functools.partial(SkipLstm, **TINY),
    "bilstm": functools.partial(BiLstm, **TINY),
}


def test_the_contract_covers_every_registered_model():
    assert set(CONTRACT) == set(MODELS)


@pytest.fixture(scope="module")
def two_columns():
    t = np.arange(300.0)
    rng = np.random.default_rng(11)
    return np.column_stack([rng.normal(size=300), seasonal(t) + rng.normal(0, NOISE, 300)])


@pytest.mark.parametrize("kind", sorted(CONTRACT))
def test_forecaster_contract(kind, two_columns):
    history, future = two_columns[:250], two_columns[250:]
    make = CONTRACT[kind]
    untouched = history.copy()

    model = make(window=12, horizon=4, targets=[1])
    with pytest.raises(ValueError, match="not fitted; call fit"):
        model.predict()
    model.fit(history)
    np.testing.assert_array_equal(history, untouched)
    first = model.predict()
    assert first.shape == (4, 1)
    if isinstance(model, NeuralForecaster):
        # A direct model has one output per step it was trained for: it can give
        # fewer steps, not more, and a model trained for another lead is another model.
        np.testing.assert_array_equal(model.predict(2), first[:2])
        with pytest.raises(ValueError, match="trained to forecast 4 steps"):
            model.predict(7)
    else:
        assert model.predict(7).shape == (7, 1)
        # lead shifts the same forecast path: steps 3-4 of lead 1 are steps 1-2 of lead 3.
        shifted = make(window=12, lead=3, horizon=2, targets=[1]).fit(history)
        np.testing.assert_allclose(shifted.predict(), first[2:4], rtol=1e-9)

    # Rows fed at once or one by one leave the same state.
    batch = make(window=12, horizon=4, targets=[1]).fit(history)
    batch.update(future)
    for row in future:
        model.update(row)
    np.testing.assert_allclose(model.predict(), batch.predict(), rtol=1e-9)

    # reset() to the history rebuilds exactly the state fit() left.
    model.reset(history)
    np.testing.assert_allclose(model.predict(), first, rtol=1e-9)

    with pytest.raises(ValueError, match="new_observations has 3 variables .* rows of 2"):
        model.update(np.ones((1, 3)))
    # Fewer rows than the window (or than the model's state needs) cannot be forecast from.
    with pytest.raises(ValueError, match=r"needs (at least )?\d+"):
        model.reset(history[: model.min_context - 1])
        model.predict()


def test_prediction_needs_a_full_window_after_reset():
    model = LinearFit(window=10).fit(np.arange(50.0))
    with pytest.raises(ValueError, match="context has 4 rows but linear needs at least 10"):
        model.reset(np.arange(4.0))
    model = Ewma(window=10).fit(np.arange(50.0))
    model.reset(np.arange(4.0))
    with pytest.raises(ValueError, match="observed 4 rows .* needs 10 .*update"):
        model.predict()
    model.update(np.arange(4.0, 10.0))
    assert model.predict().shape == (1, 1)


def test_smoothing_feeds_the_model_a_trailing_mean():
    y = np.tile([0.0, 10.0], 100)  # alternates; a width-2 mean is 5 from the 2nd row
    model = LinearFit(window=5, smoothing=2, scaling=None).fit(y)
    assert model.predict()[0, 0] == pytest.approx(5)


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda: Ewma(window=0), r"window must be a whole number ≥ 1, got 0; pass e.g. window=10"),
        (lambda: Ewma(lead=-1), r"lead must be a whole number ≥ 1, got -1; pass e.g. lead=1"),
        (lambda: Ewma(horizon=1.5), r"horizon must be a whole number ≥ 1, got 1.5"),
        (lambda: Ewma(scaling="l2"), r"scaling must be one of zscore, minmax or None, got 'l2'"),
        (
            lambda: Ewma(smoothing=0),
            r"smoothing must be a whole number ≥ 1, got 0; pass e.g. smoothing=75",
        ),
        (lambda: Ewma(alpha=2), r"alpha must be a number in \(0, 1\], got 2; pass e.g. alpha=0.3"),
        (
            lambda: Ewma(targets=[3]).fit(np.ones((10, 2))),
            r"targets has 3, which is not a column of data with 2 variables; use indices 0..1",
        ),
        (lambda: Ewma(targets=[0, 0]).fit(np.ones((10, 2))), r"targets repeats a column"),
        (
            lambda: HoltWinters(season=1),
            r"season must be a whole number ≥ 2, got 1; pass e.g. season=24",
        ),
        (lambda: HoltWinters(beta=-0.1), r"beta must be in \[0, 1\], got -0.1"),
        (lambda: HoltWinters(gamma=0.1), r"gamma weights the seasonal offsets; give season="),
        (
            lambda: HoltWinters(season=24).fit(np.ones(30)),
            r"history has 30 rows but Holt-Winters with season 24 needs at least 48",
        ),
        (
            lambda: LinearFit(window=1),
            r"window must be at least 2 for a line, got 1; pass e.g. window=10",
        ),
        (lambda: Arma(p=-1), r"p must be a whole number ≥ 0, got -1; pass e.g. p=2"),
        (lambda: Arma(p=0, q=0), r"ARMA\(0,0\) forecasts only the mean; give p ≥ 1 or q ≥ 1"),
        (
            lambda: Arar(max_lag=3),
            r"max_lag must be a whole number ≥ 4, got 3; pass e.g. max_lag=26",
        ),
        (
            lambda: Arar().fit(np.ones(100)),
            r"history has 100 rows; ARAR with max_lag=26 needs at least 149; .* max_lag \(e.g. 13\)",
        ),
        (
            lambda: Ewma().fit([[1, np.nan]]),
            r"history: row 0 column 1 is nan; fill or drop missing",
        ),
        (
            lambda: Ewma().fit(np.ones((2, 2, 2))),
            r"history must be 1-D or 2-D \(timesteps × variables\), got 3-D",
        ),
        (lambda: Ewma().fit([]), r"history is empty; give at least one timestep"),
        (lambda: Ewma().fit("abc"), r"history must be numbers .* convert it with numpy.asarray"),
        (lambda: Ewma().update([1.0]), r"ewma is not fitted; call fit\(history\) first"),
    ],
)
def test_bad_input_names_the_field_and_the_fix(make, message):
    with pytest.raises(ValueError, match=message):
        make()
