"""score() and the series loaders: the result layout, the shipped traces, and errors
that name the file, the column and the fix."""

import functools
import json

import numpy as np
import pytest

from isthmus.predict import (
    MODELS,
    Ewma,
    Forecaster,
    HoltWinters,
    NeuralForecaster,
    bundled_traces,
    load_column,
    load_trace,
    score,
)

FIELDS = {"mae_pct", "sdae_pct", "mse", "train_s", "infer_ms"}


def test_score_reports_every_model_in_the_agreed_layout():
    t = np.arange(1200.0)
    series = 100 + 0.05 * t + 10 * np.sin(2 * np.pi * t / 24)
    series += np.random.default_rng(0).normal(0, 1, len(t))
    # The statistical models; test_predict_neural.py scores the neural ones.
    statistical = [n for n in MODELS if not issubclass(MODELS[n], NeuralForecaster)]
    models = [*statistical, functools.partial(HoltWinters, season=24)]
    result = score(series, models, window=10, lead=2, horizon=3)
    json.dumps(result)  # the layout is plain JSON
    assert set(result["models"]) == {
        "ewma",
        "holt_winters",
        "holt_winters(season=24)",
        "linear",
        "arma(2,1)",
        "arar",
    }
    for name, row in result["models"].items():
        assert set(row) == FIELDS, name
        assert all(np.isfinite(v) and v >= 0 for v in row.values()), name
    setup = result["setup"]
    assert setup["rows"] == {"test": 240, "train": 720, "validation": 240}
    assert setup["first_origin"] == 47  # seasonal Holt-Winters starts from two seasons
    assert setup["origins"] == 240 - 47 - 2 - 3 + 1
    # The seasonal model sees the cycle; the level-only EWMA cannot.
    models_out = result["models"]
    assert models_out["holt_winters(season=24)"]["mae_pct"] < 2
    assert models_out["ewma"]["mae_pct"] > 2 * models_out["holt_winters(season=24)"]["mae_pct"]


def test_score_forecasts_the_chosen_columns_of_a_switch():
    rng = np.random.default_rng(1)
    ports = rng.normal(50, 5, size=(300, 4))
    result = score(ports, ["ewma"], window=5, targets=[1, 3])
    assert result["setup"]["targets"] == [1, 3]
    # White noise around 50 with sd 5: the best forecast is the level, off by ~8%.
    assert result["models"]["ewma"]["mae_pct"] == pytest.approx(8, abs=2)


def test_score_on_a_shipped_trace():
    result = score(load_trace("cortez-eu-hourly"), ["holt_winters", "arar"], window=10)
    for row in result["models"].values():
        assert row["mae_pct"] < 10  # hourly traffic one hour ahead, within 10%


class NotAForecaster:
    def __init__(self, **options):
        pass


@pytest.mark.parametrize(
    "models,kwargs,message",
    [
        ([], {}, r"models must be a non-empty list, e.g. models=\['ewma', 'arar'\]"),
        ("ewma", {}, r"models must be a non-empty list"),
        (
            ["prophet"],
            {},
            r"unknown model 'prophet'; .*known: ewma, holt_winters, linear, arma, arar",
        ),
        (["ewma", Ewma], {}, r"models has ewma more than once; give each model once"),
        ([NotAForecaster], {}, r"returned NotAForecaster, not a Forecaster"),
        ([42], {}, r"models entries must be names or Forecaster factories, got 42"),
        (["ewma"], {"window": 0}, r"window must be a whole number ≥ 1, got 0"),
        (
            ["ewma"],
            {"window": 100},
            r"the test segment has 40 rows but the first forecast needs 100 rows",
        ),
        (["ewma"], {"fractions": (0.5, 0.6, 0.1)}, r"fractions must sum to 1"),
    ],
)
def test_score_bad_input_names_the_field_and_the_fix(models, kwargs, message):
    options = {"window": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        score(np.arange(1.0, 201), models, **options)


def test_bundled_traces_load_oldest_first():
    lengths = {name: len(load_trace(name)) for name in bundled_traces()}
    assert lengths == {"cortez-eu-5min": 14772, "cortez-eu-hourly": 1231, "jiang-hourly": 4319}
    five, hourly = load_trace("cortez-eu-5min"), load_trace("cortez-eu-hourly")
    # The README says each hourly value is exactly the sum of its twelve 5-min values.
    np.testing.assert_array_equal(hourly[:100], five[:1200].reshape(100, 12).sum(axis=1))
    # The Jiang file is written newest first; loaded, its last value is the file's first.
    assert load_trace("jiang-hourly")[-1] == 222446310
    with pytest.raises(ValueError, match=r"no bundled trace 'x'; choose one of cortez-eu-5min"):
        load_trace("x")


def test_load_column_by_name_number_and_order(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("time,tx_bytes,port\n0,10,a\n1,20.5,a\n\n2,30,a\n")
    np.testing.assert_array_equal(load_column(plain, "tx_bytes"), [10, 20.5, 30])
    np.testing.assert_array_equal(load_column(plain, "1"), [10, 20.5, 30])
    reversed_ = tmp_path / "newest_first.csv"
    reversed_.write_text('"clock";"value"\n"300";"3"\n"200";"2"\n"100";"1"\n')
    np.testing.assert_array_equal(load_column(reversed_, "value", order_by="clock"), [1, 2, 3])


@pytest.mark.parametrize(
    "content,column,order_by,message",
    [
        (
            None,
            "x",
            None,
            r"series file '.*missing.csv' does not exist; give the path of a CSV file",
        ),
        (
            "a,b\n1,2\n",
            "c",
            None,
            r"'.*s.csv' has no column 'c'; name one of its columns \('a', 'b'\) or give its 0-based number \(0..1\)",
        ),
        (
            "a,b\n1,2\n3,n/a\n",
            "b",
            None,
            r"'.*s.csv' line 3, column 'b': 'n/a' is not a number; choose a numeric column or clean the file",
        ),
        ("a,b\n1,2\n3,\n", "b", None, r"line 3, column 'b': '' is not a number"),
        ("a,b\n1,inf\n", "b", None, r"line 2, column 'b': 'inf' is not a finite number"),
        ("a,b\n", "b", None, r"'.*s.csv' has no data rows"),
        ("t,b\n1,2\n1,3\n", "b", "t", r"column 't' repeats '1'; each row needs its own time"),
        ("t,b\n1,2\n", "b", "time", r"has no order_by column 'time'"),
    ],
)
def test_load_column_errors_name_the_file_and_column(tmp_path, content, column, order_by, message):
    path = tmp_path / ("missing.csv" if content is None else "s.csv")
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_column(path, column, order_by=order_by)


def test_a_forecaster_subclass_needs_only_the_four_hooks():
    class LastValue(Forecaster):
        """The naive forecast, written against the public extension points."""

        kind = "last"

        def _fit(self, data):
            self._restart(data)

        def _observe(self, rows):
            self.last = rows[-1, self.targets]

        def _restart(self, rows):
            self.last = rows[-1, self.targets]

        def _forecast(self, lead, horizon):
            return np.tile(self.last, (horizon, 1))

    result = score(np.arange(1.0, 101), [LastValue], window=1, lead=1)
    # The test rows are 1 … 20; forecasting v for the next value v + 1 is off by 1/(v+1).
    expected = 100 * np.mean(1 / np.arange(2.0, 21))
    assert result["models"]["last"]["mae_pct"] == pytest.approx(expected)


def test_forecast_bench_command_scores_a_users_csv_in_the_documented_layout(tmp_path):
    import json

    from typer.testing import CliRunner

    from isthmus.cli import app

    rng = np.random.default_rng(3)
    t = np.arange(1200)
    values = 10 + np.sin(2 * np.pi * t / 24) + 0.1 * rng.standard_normal(len(t))
    csv = tmp_path / "load.csv"
    csv.write_text("t,util\n" + "".join(f"{i},{v}\n" for i, v in zip(t, values, strict=True)))
    out = tmp_path / "scores.json"
    runner = CliRunner()
    args = ["forecast-bench", "--series", str(csv), "--column", "util", "--season", "24"]
    statistical = "ewma,holt_winters,linear,arma,arar"
    result = runner.invoke(
        app, [*args, "--window", "24", "--models", statistical, "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert set(data["models"]) >= {"ewma", "arar", "holt_winters(season=24)"}
    for m in data["models"].values():
        assert set(m) == {"mae_pct", "sdae_pct", "mse", "train_s", "infer_ms"}
    # A seasonal model that knows the season beats a level-only one on a daily sine.
    assert data["models"]["holt_winters(season=24)"]["mae_pct"] < data["models"]["ewma"]["mae_pct"]
    bad = runner.invoke(app, ["forecast-bench", "--series", str(csv), "--column", "nope"])
    assert bad.exit_code != 0 and "no column 'nope'" in bad.output
    alone = runner.invoke(app, ["forecast-bench", "--series", str(csv)])
    assert alone.exit_code != 0 and "go together" in alone.output
    wrong = runner.invoke(app, [*args, "--models", "ewma,prophet"])
    assert wrong.exit_code != 0 and "unknown model(s) prophet" in wrong.output


def test_forecast_bench_without_torch_scores_the_statistical_models_and_says_so(
    tmp_path, monkeypatch
):
    import json

    from typer.testing import CliRunner

    from isthmus.cli import app
    from isthmus.predict import models

    monkeypatch.setattr(models, "torch_available", lambda: False)
    t = np.arange(400)
    csv = tmp_path / "load.csv"
    csv.write_text("t,util\n" + "".join(f"{i},{10 + np.sin(i / 4)}\n" for i in t))
    out = tmp_path / "scores.json"
    args = ["forecast-bench", "--series", str(csv), "--column", "util", "--window", "8"]
    result = CliRunner().invoke(app, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "skipping dense, rnn, gru, lstm, skip_lstm, bilstm" in result.output
    scored = set(json.loads(out.read_text())["models"])
    assert "arar" in scored and not scored & set(models.NEURAL)
