"""The neural forecasters: they learn a structured series and leave white noise alone,
train only on examples inside one segment, repeat for a seed, batch many switches in
one pass, save and load exactly, and Skip-LSTM's budget makes it update less.

The models here are small and few-epoch so the whole file runs in well under a minute
on two CPU cores; the defaults are what forecast-bench runs."""

import functools

import numpy as np
import pytest
import torch

from isthmus.experiments.forecast_bench import model_specs
from isthmus.predict import (
    MODELS,
    BiLstm,
    Dense,
    Gru,
    Lstm,
    NeuralForecaster,
    Rnn,
    SkipLstm,
    score,
    split_rows,
)
from isthmus.predict import nets as nets_module

NEURAL = ["dense", "rnn", "gru", "lstm", "skip_lstm", "bilstm"]
SMALL = {"hidden": 16, "epochs": 40, "patience": 5, "learning_rate": 3e-3}
PERIOD = 24


def small(kind, **overrides):
    return functools.partial(MODELS[kind], **{**SMALL, **overrides})


def noisy_sine(rows, noise=0.2, seed=0):
    t = np.arange(rows, dtype=float)
    return (
        10 + 2 * np.sin(2 * np.pi * t / PERIOD) + np.random.default_rng(seed).normal(0, noise, rows)
    )


def ar2(rows, phi=(0.6, -0.3), seed=1):
    noise = np.random.default_rng(seed).normal(size=rows + 200)
    y = np.zeros(rows + 200)
    for t in range(2, rows + 200):
        y[t] = phi[0] * y[t - 1] + phi[1] * y[t - 2] + noise[t]
    return 10 + y[200:]


def switch(rows=1200, ports=4, seed=3):
    """Ports that share a daily shape, each with its own phase and noise."""
    t = np.arange(rows, dtype=float)[:, None]
    rng = np.random.default_rng(seed)
    return (
        50
        + 10 * np.sin(2 * np.pi * (t + 3 * np.arange(ports)) / PERIOD)
        + rng.normal(0, 1, (rows, ports))
    )


def test_every_neural_model_is_registered_and_benchmarked():
    assert set(NEURAL) <= set(MODELS)
    assert set(NEURAL) <= set(model_specs(None))
    for kind in NEURAL:
        assert issubclass(MODELS[kind], NeuralForecaster)


@pytest.mark.parametrize("kind", NEURAL)
def test_learns_a_noisy_sine_that_ewma_lags(kind):
    result = score(noisy_sine(1500), ["ewma", small(kind)], window=PERIOD, lead=1, horizon=1)
    errors = {name.split("(")[0]: row["mse"] for name, row in result["models"].items()}
    # EWMA follows the sine a step late; a net that has the shape errs by about the
    # noise (variance 0.04), far below the lag error.
    assert errors[kind] < 0.5 * errors["ewma"]
    assert errors[kind] < 3 * 0.2**2


def test_learns_an_ar2_better_than_ewma():
    result = score(ar2(2000), ["ewma", small("dense", hidden_layers=0)], window=5)
    errors = [row["mse"] for row in result["models"].values()]
    # The best one-step forecast errs by the innovation variance 1; EWMA's level misses
    # the AR(2)'s oscillation.
    assert errors[1] < 0.9 * errors[0]
    assert errors[1] == pytest.approx(1, abs=0.15)


LEVEL = 5.0


@pytest.fixture(scope="module")
def white_noise():
    return LEVEL + np.random.default_rng(4).normal(0, 1, 1500)


@pytest.mark.parametrize("kind", NEURAL)
def test_does_not_fit_white_noise(kind, white_noise):
    # A net big enough to memorise its 900 training rows, with epochs to spare.
    result = score(white_noise, ["ewma", small(kind, hidden=64, epochs=150)], window=10)
    ewma, neural = (row["mse"] for row in result["models"].values())
    test = white_noise[split_rows(len(white_noise)).test]
    best = np.mean((test[10:] - LEVEL) ** 2)  # knowing the true mean: the least error possible
    # There is nothing to learn, so nothing meaningful to win over EWMA (whose own
    # noisy level costs it a few percent over the true mean)...
    assert neural > 0.9 * ewma
    # ... and early stopping keeps the net from learning the training rows' noise.
    assert neural < 1.1 * best


def test_without_early_stopping_the_same_net_fits_white_noise(white_noise):
    # What the test above guards against: stopped on its own training rows instead of
    # held-out ones, a GRU learns their noise and forecasts new rows far worse.
    cut = split_rows(len(white_noise))
    train, test = white_noise[cut.train], white_noise[cut.test]
    best = np.mean((test[10:] - LEVEL) ** 2)
    make = small("gru", hidden=64, epochs=150, patience=150)
    assert one_step_mse(make(window=10).fit(train, train), test) > 1.25 * best


def one_step_mse(model, rows):
    """Mean squared error of one-step forecasts at every origin of `rows` after the
    first window, forecast in one batch."""
    contexts = np.lib.stride_tricks.sliding_window_view(rows[:-1], model.window)[..., None]
    return float(np.mean((model.predict_batch(contexts)[:, 0, 0] - rows[model.window :]) ** 2))


def test_a_residual_net_follows_a_level_it_never_trained_on():
    # The same sine 20 above every training row (14 training standard deviations): a
    # net that outputs the level forecasts the training level back; one that outputs
    # the change from the last value carries the new level on.
    history, shifted = noisy_sine(1200), noisy_sine(300, seed=9) + 20
    errors = {
        residual: one_step_mse(
            small("lstm", residual=residual)(window=PERIOD).fit(history), shifted
        )
        for residual in (True, False)
    }
    assert errors[True] < 1 < 100 < errors[False]


@pytest.mark.parametrize("window,lead,horizon", [(1, 1, 1), (6, 3, 2)])
def test_score_trains_inside_the_train_split_and_stops_on_the_validation_split(
    monkeypatch, window, lead, horizon
):
    # Each value is its row number + 1, unscaled, so a value seen names its row.
    rows = 400
    series = np.arange(1.0, rows + 1)
    cut = split_rows(rows)
    seen = []
    real_train = nets_module.train

    def spy(net, training, validation, **options):
        seen.extend([training, validation])
        return real_train(net, training, validation, **options)

    monkeypatch.setattr(nets_module, "train", spy)
    model = functools.partial(Gru, scaling=None, hidden=4, epochs=1)
    score(series, [model], window, lead, horizon)
    for (x, y), segment in zip(seen, (cut.train, cut.validation), strict=True):
        # .cpu(): on a GPU machine the training tensors live on the GPU.
        x, y = x[..., 0].cpu().numpy(), y[..., 0].cpu().numpy()
        # Inputs and targets from this segment alone: none spans a split boundary, none
        # comes from the test rows.
        assert x.min() == segment.start + 1 and y.max() == segment.stop
        # Every target lies `lead` or more steps after the example's last input.
        np.testing.assert_array_equal(y[:, 0], x[:, -1] + lead)
        assert len(x) == segment.stop - segment.start - (window + lead + horizon - 1) + 1


def test_fit_without_validation_holds_out_the_history_end(monkeypatch):
    seen = {}
    real_train = nets_module.train

    def spy(net, training, held_out, **options):
        seen["training"], seen["validation"] = training[0], held_out[0]
        return real_train(net, training, held_out, **options)

    monkeypatch.setattr(nets_module, "train", spy)
    Dense(window=4, scaling=None, epochs=1).fit(np.arange(400.0))
    training, validation = seen["training"].cpu().numpy(), seen["validation"].cpu().numpy()
    assert training.max() < 300 <= validation.min()  # the last quarter


def test_the_same_seed_repeats_and_another_seed_differs():
    data = switch(600)
    make = functools.partial(Gru, window=12, horizon=3, hidden=8, epochs=5)
    first, again, other = (make(seed=s).fit(data).predict() for s in (7, 7, 8))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # Fitting leaves the caller's random draws where they were.
    torch.manual_seed(1)
    expected = torch.rand(3)
    torch.manual_seed(1)
    make(seed=7).fit(data)
    torch.testing.assert_close(torch.rand(3), expected)


def ar1_runs(count, rows=200, phi=0.3, seed=11):
    """`count` separate runs of y_t = phi y_(t-1) + e_t, e_t ~ N(0, 1), each (rows x 1)."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(count):
        noise = rng.normal(size=rows)
        y = np.zeros(rows)
        for t in range(1, rows):
            y[t] = phi * y[t - 1] + noise[t]
        runs.append(y[:, None])
    return runs


def test_one_model_fitted_on_many_short_runs_reaches_the_best_forecast_of_an_ar1():
    # IBCN's arena training: many short series (a switch in a run each), one model.
    phi = 0.3
    training, validation = ar1_runs(12, phi=phi), ar1_runs(3, phi=phi, seed=12)
    model = Lstm(window=5, horizon=1, seed=0).fit_segments(training, validation)
    (test,) = ar1_runs(1, rows=3000, phi=phi, seed=13)
    contexts = np.stack([test[t - 5 : t] for t in range(5, len(test))])
    forecast = model.predict_batch(contexts)[:, 0, 0]
    actual = test[5:, 0]
    mse = np.mean((forecast - actual) ** 2)
    # The best one-step forecast, phi times the last value, errs by the innovation
    # variance 1; the last value itself by 2 / (1 + phi) = 1.54.
    assert mse == pytest.approx(1.0, abs=0.08)
    assert mse < 0.75 * np.mean((test[4:-1, 0] - actual) ** 2)
    assert model.variables == 1 and model.training_run.best_epoch > 0


def test_no_example_spans_two_segments(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        NeuralForecaster,
        "_train",
        lambda self, x, y, vx, vy, variables: seen.update(x=x, y=y, vx=vx, variables=variables),
    )
    # Ramps climbing by 1 from levels 1000 apart; one too short for an example (4 rows).
    ramps = [
        level + np.arange(rows, dtype=float)[:, None]
        for level, rows in ((0, 20), (1e3, 3), (2e3, 9))
    ]
    model = Dense(window=3, horizon=1, scaling=None).fit_segments(
        ramps, [5e3 + np.arange(6.0)[:, None]]
    )
    x, y = seen["x"], seen["y"]
    assert len(x) == (20 - 3) + (9 - 3) and len(seen["vx"]) == 6 - 3 and seen["variables"] == 1
    # Inside a segment the value after a window is its last plus 1; a join would jump.
    np.testing.assert_array_equal(y[:, 0, 0] - x[:, -1, 0], np.ones(len(x)))
    # It stands at the end of the last segment.
    np.testing.assert_array_equal(model._context[:, 0], [2006.0, 2007.0, 2008.0])


@pytest.mark.parametrize(
    "history, validation, message",
    [
        (np.zeros((40, 1)), [np.zeros((40, 1))], "history must be a non-empty list of segments"),
        ([np.zeros((40, 1))], [], "validation must be a non-empty list of segments"),
        ([np.zeros((40, 1)), np.zeros((40, 2))], [np.zeros((40, 1))], r"history\[1\]"),
        ([np.zeros((2, 1))], [np.zeros((40, 1))], "no history segment holds one training example"),
    ],
)
def test_bad_segments_name_the_field_and_the_fix(history, validation, message):
    with pytest.raises(ValueError, match=message):
        Dense(window=3, epochs=1).fit_segments(history, validation)


@pytest.mark.parametrize("kind", ["dense", "gru", "skip_lstm"])
def test_batched_inference_equals_inference_per_switch(kind):
    data = switch(1400)
    model = small(kind, epochs=5)(window=12, horizon=3, targets=[0, 2], smoothing=3).fit(data[:900])
    rng = np.random.default_rng(5)
    # 100 switches' latest 20 rows each; longer than the window, so smoothing applies.
    contexts = np.stack([data[s : s + 20] for s in rng.integers(900, 1380, 100)])
    batched = model.predict_batch(contexts)
    assert batched.shape == (100, 3, 2)
    for context, forecast in zip(contexts, batched, strict=True):
        model.reset(context)
        # One pass for 100 windows rounds like 100 passes of one, to float32 precision.
        np.testing.assert_allclose(forecast, model.predict(), rtol=1e-6)


@pytest.mark.parametrize("kind", NEURAL)
def test_save_and_load_round_trip_exactly(kind, tmp_path):
    data = switch(500)
    model = small(kind, epochs=3)(window=8, horizon=2, targets=[1], smoothing=4).fit(data[:400])
    model.update(data[400:450])  # the state after fit moves on; it must be saved too
    path = tmp_path / f"{kind}.pt"
    model.save(path)

    raw = torch.load(path, weights_only=True)  # tensors and plain values only
    assert raw["kind"] == kind
    loaded = NeuralForecaster.load(path)
    assert type(loaded) is type(model) and loaded.name == model.name
    np.testing.assert_array_equal(loaded.predict(), model.predict())
    # Streaming on from the saved state (smoothing included) stays identical.
    model.update(data[450:])
    loaded.update(data[450:])
    np.testing.assert_array_equal(loaded.predict(), model.predict())
    contexts = np.stack([data[:30], data[100:130]])
    np.testing.assert_array_equal(loaded.predict_batch(contexts), model.predict_batch(contexts))


def test_skip_lstm_budget_lowers_its_update_rate():
    series = noisy_sine(1500, noise=0.3)
    rates = {}
    for budget in (0.0, 0.1):
        model = SkipLstm(window=10, hidden=32, epochs=60, budget=budget).fit(
            series[300:1200], series[1200:]
        )
        rates[budget] = model.update_rate(series[:300])
    # Without a budget every row is worth reading; pricing each update at 0.1 (about a
    # normalised squared error) makes the gate skip a good share of them.
    assert rates[0.0] > 0.9
    assert rates[0.1] < rates[0.0] - 0.2


def test_device_auto_is_cuda_when_torch_finds_a_gpu_else_the_cpu():
    model = Dense(epochs=1).fit(np.arange(100.0))
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert next(model.network.parameters()).device.type == expected


def test_name_shows_what_differs_from_the_defaults():
    assert Lstm().name == "lstm"
    assert Lstm(layers=3, hidden=64, device="cpu", threads=2).name == "lstm(layers=3, hidden=64)"
    assert SkipLstm(budget=0.05).name == "skip_lstm(budget=0.05)"
    assert Gru(residual=False).name == "gru(residual=False)"
    assert (
        Dense(hidden_layers=0, learning_rate=0.01).name
        == "dense(hidden_layers=0, learning_rate=0.01)"
    )


def fitted_gru():
    return Gru(window=5, horizon=2, hidden=4, epochs=1).fit(np.ones((60, 2)))


@pytest.mark.parametrize(
    "make,message",
    [
        (
            lambda: Dense(hidden_layers=2),
            r"hidden_layers must be 0–1 \(Diolkos's Dense nets have 0 or 1\), got 2; pass e.g. hidden_layers=0",
        ),
        (
            lambda: Gru(layers=3),
            r"layers must be 1–2 \(Diolkos's GRUs have 1 or 2\), got 3; pass e.g. layers=1",
        ),
        (lambda: Lstm(layers=9), r"layers must be 1–8 \(Diolkos's LSTMs have 1 to 8\), got 9"),
        (lambda: Rnn(layers=0), r"layers must be a whole number ≥ 1, got 0; pass e.g. layers=1"),
        (lambda: BiLstm(layers=1.5), r"layers must be a whole number ≥ 1, got 1.5"),
        (
            lambda: SkipLstm(budget=-1),
            r"budget must be a number ≥ 0, got -1; pass e.g. budget=0.01",
        ),
        (lambda: Gru(hidden=0), r"hidden must be a whole number ≥ 1, got 0; pass e.g. hidden=32"),
        (lambda: Gru(epochs=0), r"epochs must be a whole number ≥ 1, got 0; pass e.g. epochs=100"),
        (lambda: Gru(patience=0), r"patience must be a whole number ≥ 1, got 0"),
        (lambda: Gru(batch_size=0), r"batch_size must be a whole number ≥ 1, got 0"),
        (
            lambda: Gru(learning_rate=0),
            r"learning_rate must be a number > 0, got 0; pass e.g. learning_rate=0.001",
        ),
        (lambda: Gru(learning_rate="fast"), r"learning_rate must be a number > 0, got 'fast'"),
        (lambda: Gru(seed=-1), r"seed must be a whole number ≥ 0, got -1; pass e.g. seed=0"),
        (lambda: Gru(device="tpu"), r"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
        (lambda: Gru(threads=0), r"threads must be a whole number ≥ 1, got 0; pass e.g. threads=1"),
        (
            lambda: Gru(residual=1),
            r"residual must be True or False, got 1; pass e.g. residual=True",
        ),
        (
            lambda: Gru(window=10).fit(np.ones(30)),
            r"history has 30 rows, of which the last 8 are held out for early stopping \(pass validation=… to choose them\), too few for one training example of 11 rows",
        ),
        (
            lambda: Gru(window=10).fit(np.ones(100), np.ones(5)),
            r"validation has 5 rows, too few for one training example of 11 rows \(window 10 \+ lead 1 \+ horizon 1 − 1\); give a longer validation or a smaller window",
        ),
        (
            lambda: Gru().fit(np.ones((100, 2)), np.ones((50, 3))),
            r"validation has 3 variables per timestep but the model was fitted on 2",
        ),
        (
            lambda: fitted_gru().predict(3),
            r"gru\(hidden=4, epochs=1\) was trained to forecast 2 steps at once .* refit with horizon=3",
        ),
        (
            lambda: Gru().predict_batch(np.ones((2, 10, 1))),
            r"gru is not fitted; call fit\(history\) first",
        ),
        (
            lambda: fitted_gru().predict_batch(np.ones((3, 5, 1))),
            r"contexts must be switches × rows × 2 variables, got shape \(3, 5, 1\)",
        ),
        (
            lambda: fitted_gru().predict_batch(np.ones((3, 4, 2))),
            r"contexts has 4 rows per switch but .* reads a window of 5; give at least 5",
        ),
        (
            lambda: fitted_gru().predict_batch(np.full((1, 5, 2), np.nan)),
            r"contexts: switch 0 row 0 column 0 is nan",
        ),
        (
            lambda: fitted_gru().predict_batch("x"),
            r"contexts must be numbers, switches × rows × variables",
        ),
        (lambda: Gru().save("never.pt"), r"gru is not fitted; call fit\(history\) before save\(\)"),
        (
            lambda: NeuralForecaster.load("/no/such/model.pt"),
            r"model file '/no/such/model.pt' does not exist",
        ),
    ],
)
def test_bad_input_names_the_field_and_the_fix(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_load_refuses_other_files_and_other_kinds(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("not a model")
    with pytest.raises(ValueError, match=r"is not a model file torch can read safely"):
        NeuralForecaster.load(text)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(1)}, other)
    with pytest.raises(ValueError, match=r"was not written by save\(\)"):
        NeuralForecaster.load(other)
    saved = tmp_path / "gru.pt"
    fitted_gru().save(saved)
    with pytest.raises(
        ValueError, match=r"holds a gru model, not a Lstm; load it with NeuralForecaster.load"
    ):
        Lstm.load(saved)
    assert isinstance(Gru.load(saved, device="cpu"), Gru)


def test_asking_for_a_missing_gpu_names_the_fix(monkeypatch):
    # Whatever this machine has, the test sees a machine without a GPU.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        ValueError,
        match=r"device is 'cuda' but torch finds no CUDA GPU here; pass device='auto' or 'cpu'",
    ):
        Dense(device="cuda").fit(np.arange(100.0))
