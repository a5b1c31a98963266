"""Windowing, smoothing, scaling and score() never let a value from after a forecast's
origin, or from outside the training split, reach the model."""

import numpy as np
import pytest

from isthmus.predict import Forecaster, MovingAverage, Windowing, examples, score, split_rows

MARKER = 1e9


@pytest.mark.parametrize("window,lead,horizon", [(1, 1, 1), (5, 1, 3), (8, 4, 2), (3, 10, 6)])
def test_every_target_lies_after_every_input_and_inside_the_segment(window, lead, horizon):
    rows = 50
    w = Windowing(window, lead, horizon)
    origins = w.origins(rows)
    inputs, targets = w.input_rows(origins), w.target_rows(origins)
    assert len(origins) == rows - w.span + 1
    assert inputs.min() >= 0 and targets.max() < rows
    assert np.all(targets.min(axis=1) > inputs.max(axis=1))
    assert np.all(inputs.max(axis=1) == origins)
    assert np.all(targets.min(axis=1) == origins + lead)


def test_examples_from_a_split_never_read_the_rows_beyond_it():
    # Rows past the boundary hold a marker; an example that read or answered any of
    # them would carry it.
    boundary = 60
    series = np.arange(100.0)
    series[boundary:] = MARKER
    inputs, answers, origins = examples(series[:boundary], Windowing(7, 3, 4))
    assert MARKER not in inputs and MARKER not in answers
    assert answers.max() == boundary - 1  # the segment's last row is still used
    np.testing.assert_array_equal(inputs[:, -1, 0], origins)
    np.testing.assert_array_equal(answers[:, 0, 0], origins + 3)


def test_examples_of_a_too_short_segment_name_the_span():
    with pytest.raises(ValueError, match=r"segment has 5 rows but one example spans 7"):
        examples(np.arange(5.0), Windowing(4, 2, 2))


def test_smoothing_is_trailing_and_streams_like_a_batch():
    series = np.zeros((40, 1))
    series[30] = MARKER
    smoothed = MovingAverage(5).restart(series)
    assert np.all(smoothed[:30] == 0)  # nothing before the spike sees it
    assert smoothed[30, 0] == pytest.approx(MARKER / 5)
    rng = np.random.default_rng(0)
    data = rng.normal(size=(50, 2))
    batch = MovingAverage(7).restart(data)
    stream = MovingAverage(7)
    pieces = [stream.restart(data[:10])] + [stream.push(data[i : i + 1]) for i in range(10, 50)]
    np.testing.assert_allclose(np.vstack(pieces), batch)
    np.testing.assert_allclose(batch[:3, 0], np.cumsum(data[:3, 0]) / [1, 2, 3])


class Spy(Forecaster):
    """Forecasts 0 and records exactly which values it was shown before each forecast."""

    kind = "spy"

    def __init__(self, **options):
        super().__init__(scaling=None, **options)
        self.trained_on = np.zeros(0)
        self.visible: list[float] = []
        self.shown_at_predict: list[list[float]] = []

    def _fit(self, data):
        self.trained_on = data[:, 0].copy()
        self.visible = list(data[:, 0])

    def _observe(self, rows):
        self.visible.extend(rows[:, 0])

    def _restart(self, rows):
        self.visible = list(rows[:, 0])

    def _forecast(self, lead, horizon):
        self.shown_at_predict.append(list(self.visible))
        return np.zeros((horizon, len(self.targets)))


@pytest.mark.parametrize("window,lead,horizon", [(1, 1, 1), (6, 3, 4)])
def test_score_trains_on_the_train_split_and_forecasts_only_from_the_past(window, lead, horizon):
    # Each value is its row number + 1, so a value seen tells which row it came from.
    rows = 200
    series = np.arange(1.0, rows + 1)
    cut = split_rows(rows)
    spies: list[Spy] = []

    def factory(**options):
        spies.append(Spy(**options))
        return spies[-1]

    result = score(series, [factory], window, lead, horizon)
    spy = spies[0]
    np.testing.assert_array_equal(spy.trained_on, series[cut.train])
    setup = result["setup"]
    assert len(spy.shown_at_predict) == setup["origins"]
    for k, shown in enumerate(spy.shown_at_predict):
        origin = setup["first_origin"] + k
        # Exactly the test rows up to the origin: nothing later, nothing from train.
        assert shown == list(series[: origin + 1])
        assert origin + lead + horizon - 1 < cut.test.stop
    # Forecasting 0 everywhere is off by exactly 100% of every (non-zero) actual.
    assert result["models"]["spy"]["mae_pct"] == pytest.approx(100)
    assert result["models"]["spy"]["sdae_pct"] == pytest.approx(0)


def test_normalisation_is_frozen_at_fit_time():
    from isthmus.predict import Ewma

    history = np.random.default_rng(1).normal(10, 2, size=(300, 1))
    for kind in ("zscore", "minmax"):
        model = Ewma(scaling=kind).fit(history)
        before = (model.scaler.offset.copy(), model.scaler.scale.copy())
        model.update(np.full((50, 1), MARKER))
        model.reset(np.full((50, 1), -MARKER))
        np.testing.assert_array_equal(model.scaler.offset, before[0])
        np.testing.assert_array_equal(model.scaler.scale, before[1])
    zs = Ewma(scaling="zscore").fit(history).scaler.transform(history)
    assert zs.mean() == pytest.approx(0, abs=1e-12) and zs.std() == pytest.approx(1)
    mm = Ewma(scaling="minmax").fit(history).scaler.transform(history)
    assert mm.min() == 0 and mm.max() == 1


def test_moving_average_keeps_the_shape_it_is_given():
    from isthmus.predict import moving_average

    np.testing.assert_allclose(moving_average([2.0, 4.0, 6.0, 8.0], 2), [2, 3, 5, 7])
    assert moving_average(np.ones((5, 3)), 4).shape == (5, 3)
