"""IBCN's controller: it polls every congestion point, fits or takes a forecaster, and
its forecasts, not the measured queues, decide the BCN feedback."""

from __future__ import annotations

import numpy as np
import pytest

from isthmus import Link, Simulation, Topology
from isthmus.control import ControlPlane
from isthmus.control.apps.ibcn import REPLY_BYTES, REQUEST_BYTES, Ibcn
from isthmus.predict import StatelessForecaster


class Fixed(StatelessForecaster):
    """Forecasts the same queue for every point, whatever it observes."""

    kind = "fixed"

    def __init__(self, value: float, **options):
        super().__init__(**options)
        self.value = value

    def _forecast(self, lead, horizon):
        return np.full((horizon, len(self.targets)), self.value)


def star(**bcn) -> Simulation:
    hosts = ["a", "b", "rx"]
    links = [(h, "s", Link("1Gbps", "1us")) for h in hosts]
    sim = Simulation(Topology.custom(hosts, ["s"], links), switch_queue="1000pkts", bcn=bcn)
    for host in range(2):
        sim.add_bcn_flow(
            host, 2, fair_share="500Mbps", stop="30ms", min_pause="1ms", max_pause="1ms"
        )
    return sim


def run(forecaster=None, **options):
    sim = star(pm=0.05)
    plane = ControlPlane(sim)
    app = None
    if forecaster is not None or options:
        app = plane.add(Ibcn(forecaster=forecaster, interval="100us", **options))
    plane.run("30ms")
    feedback = {k: int(sim.bcn()[k].sum()) for k in ("positive", "normal", "stop")}
    return sim, app, feedback


def fitted(value: float) -> Fixed:
    # One switch: one series.
    return Fixed(value, horizon=5).fit(np.zeros((20, 1)))


def test_forecasts_not_measured_queues_decide_the_feedback():
    _, _, plain = run()
    assert plain["normal"] + plain["stop"] > 0, "two line-rate sources congest plain BCN"
    _, app, calm = run(fitted(0.0))
    # Forecasts below Qeq: no negative feedback at all, whatever the queue does.
    assert calm["normal"] == calm["stop"] == 0, calm
    sim, app, alarmed = run(fitted(100.0))
    # Forecasts at or above Qsc: only STOPs, and the sources sit paused most of the run.
    assert alarmed["stop"] > 0 and alarmed["normal"] == 0, alarmed
    assert app.rounds_predicted >= 250
    assert sim.flows()["bytes_delivered"].sum() * 8 / 0.03 < 0.5e9
    # Each poll: an 8 B request and a 104 B reply for the one switch.
    assert app.control_bytes == app.polls * (REQUEST_BYTES + REPLY_BYTES)


def test_a_model_fitted_on_the_run_drives_bcn_once_trained():
    sim, app, feedback = run(model="holt_winters", window=1, horizon=5, training_polls=50)
    assert app.model.fitted and app.polls >= 299
    assert app.rounds_predicted == app.polls - 50
    assert feedback["normal"] + feedback["stop"] > 0


def test_bad_setups_are_refused():
    with pytest.raises(ValueError, match="needs a fitted forecaster, or training_polls"):
        Ibcn(model="lstm", training_polls=3)
    with pytest.raises(ValueError, match="must be fitted"):
        Ibcn(forecaster=Fixed(1.0))
    plain = Simulation(Topology.custom(["a", "b"], ["s"], [("a", "s", Link()), ("s", "b", Link())]))
    plane = ControlPlane(plain)
    plane.add(Ibcn(forecaster=fitted(1.0)))
    with pytest.raises(ValueError, match="configure bcn on the network"):
        plane.run("1ms")
    sim = star()
    plane = ControlPlane(sim)
    plane.add(Ibcn(forecaster=Fixed(1.0).fit(np.zeros((20, 5))), series="port"))
    with pytest.raises(
        ValueError, match=r"fitted on 5 series but this network has 3 \(port series\)"
    ):
        plane.run("1ms")
    assert Ibcn(forecaster=Fixed(1.0, horizon=3).fit(np.zeros((20, 1)))).horizon == 3
    with pytest.raises(ValueError, match="series must be 'switch' or 'port'"):
        Ibcn(forecaster=fitted(1.0), series="link")


def two_switches() -> Simulation:
    """a and b behind s1 send to rx behind s2 at line rate: s1's uplink queues, s2 never."""
    links = [
        ("a", "s1", Link("1Gbps", "1us")),
        ("b", "s1", Link("1Gbps", "1us")),
        ("s1", "s2", Link("1Gbps", "1us")),
        ("rx", "s2", Link("1Gbps", "1us")),
    ]
    sim = Simulation(
        Topology.custom(["a", "b", "rx"], ["s1", "s2"], links),
        switch_queue="1000pkts",
        bcn={"pm": 0.05},
    )
    for host in range(2):
        sim.add_bcn_flow(host, 2, fair_share="500Mbps", stop="10ms")
    return sim


def test_one_model_every_switch_shares_forecasts_each_from_its_own_polls(monkeypatch):
    from isthmus.predict import Dense

    # A linear residual net fitted on series that hold their level forecasts the last
    # poll: each point's forecast must be its own switch's last poll.
    levels = [np.full((40, 1), level) for level in (0.0, 30.0, 90.0, 300.0)]
    model = Dense(window=4, horizon=3, hidden_layers=0, seed=1, scaling=None)
    model.fit_segments(levels, levels)
    handed = []
    monkeypatch.setattr(
        Ibcn, "set_bcn_predictions", lambda self, forecasts: handed.append(forecasts)
    )
    sim = two_switches()
    plane = ControlPlane(sim)
    app = plane.add(Ibcn(forecaster=model, interval="100us"))
    plane.run("10ms")
    assert app._shared and len(handed) == app.polls - model.window + 1
    last = app.history[-1]
    assert last[0] > 20 and last[1] == 0, "s1's uplink queues and s2's ports never do"
    switches = sorted({node for node, _ in app.points})
    for (node, _port), forecast in handed[-1].items():
        np.testing.assert_allclose(forecast, [last[switches.index(node)]] * 3, atol=1.5)


def test_a_shared_model_must_forecast_in_batches():
    plane = ControlPlane(two_switches())
    plane.add(Ibcn(forecaster=fitted(1.0)))
    with pytest.raises(ValueError, match="forecasts them in one batch, which fixed cannot"):
        plane.run("1ms")


def test_the_prediction_study_measures_every_model_on_the_papers_dataset(monkeypatch, tmp_path):
    from isthmus.experiments import run_study
    from isthmus.studies import ibcn as study

    monkeypatch.setitem(study.QUICK, "polls", 300)
    monkeypatch.setitem(study.QUICK, "epochs", 2)
    monkeypatch.setitem(study.QUICK, "layers", (1,))
    data = study.collect(1, 300)
    # 8 switches; the aggregation switch above the destinations' edge is the bottleneck.
    assert data.shape == (300, 8)
    assert data[:, 1].mean() > 20 and data[:, 0].max() == 0
    from isthmus.studies.ibcn import study as both

    monkeypatch.setitem(both.QUICK, "scenario1", ("none", "bcn"))
    monkeypatch.setitem(both.QUICK, "scenario2", ())
    monkeypatch.setitem(both.QUICK, "loads", ())
    results = run_study(study, quick=True, seeds=[1], folder=tmp_path)
    table = study.table(results)
    rows = {row[0]: row for row in table.rows}
    assert rows["Eq. 11 %, fixed rate | lstm"][2] == "3.7"
    assert rows["Eq. 11 %, BCN on | arma"][2] == "41.3"
    assert rows["Eq. 11 %, fixed rate | zero (baseline)"][1:4] == ["100.0", "", "100.0"]
    assert "LSTM layers, fixed rate | 1" in rows
    assert "WAPE % per switch, BCN on | edge0" in rows
    assert rows["scenario1 TPS | bcn"][2] == "7,124" and rows["scenario1 TPS | none"][1]
    for regime in ("fixed rate", "BCN on"):
        (scored,) = results.values("models", experiment="forecasters", variant=regime)
        for name in (*study.MODEL_OPTIONS, "persistence", "training_mean", "zero"):
            assert np.isfinite(scored[name]["mse"]) and np.isfinite(scored[name]["wape_pct"])


def test_bcn_and_ibcn_act_on_the_studys_continuous_senders():
    """Scenario 2 on a short time scale: BCN regulating the 48 TCP senders halves the
    packets' delay against no congestion management, and IBCN forecasts every poll
    after its training polls."""
    from isthmus.studies.ibcn import congestion

    scale = congestion.TimeScale("short", 1e-3, "200us", "800us", 75, 0.1)
    continuous = congestion.Workload(continuous=True)
    none = congestion.scenario(2, "none", scale, 2, continuous, bins=5)
    bcn = congestion.scenario(2, "bcn", scale, 2, continuous, bins=5)
    assert bcn["delay_us"] < 0.7 * none["delay_us"], (bcn["delay_us"], none["delay_us"])
    assert bcn["feedback"]["stop"] > 0 and "feedback" not in none
    ibcn = congestion.scenario(2, "ibcn-holt_winters", scale, 2, continuous, bins=5)
    assert ibcn["rounds_predicted"] == 100, "one forecast a poll from the end of training"
    assert ibcn["control_bytes"] == 175 * 8 * (8 + 104)
    transactions = congestion.scenario(2, "bcn", scale, 2, congestion.Workload(), bins=5)
    # 48 closed loops of 10 KB with 1-5 ms of thinking: at most 48 / 1 ms a second.
    assert 0 < transactions["tps"] < 48 / 1e-3
    assert transactions["transaction_ms"] > 0


def test_the_congestion_half_runs_the_papers_64_byte_packets_and_labels_1500_byte_rows():
    """Section V's 64 B packets are the main setting of every congestion experiment;
    the 1500 B runs are sensitivity rows, labelled so, never the rows claims read."""
    import inspect

    from isthmus.experiments import study_settings
    from isthmus.studies import ibcn
    from isthmus.studies.ibcn import congestion
    from isthmus.studies.ibcn import study as ibcn_study

    assert congestion.PACKET_BYTES == 64
    for function in (congestion.scenario, congestion.run_scenario):
        assert inspect.signature(function).parameters["packet_bytes"].default == 64
    for quick in (False, True):
        settings = study_settings(ibcn, quick)
        jobs = [j for j in ibcn.jobs(settings, [1, 2]) if j.run is congestion.run_scenario]
        by_size: dict[int, set[str]] = {}
        for job in jobs:
            by_size.setdefault(job.params["packet_bytes"], set()).add(job.experiment)
        assert set(by_size) == {64, 1500}, by_size
        assert all(not e.endswith(" B") for e in by_size[64]), by_size[64]
        assert all(e.endswith(" 1500 B") for e in by_size[1500]), by_size[1500]
        # Every experiment runs at 64 B; its 1500 B twin is a sensitivity row of it.
        assert {e.removesuffix(" 1500 B") for e in by_size[1500]} <= by_size[64]
        assert {"scenario1", "scenario2"} <= by_size[64]
        assert {"scenario1 1500 B", "scenario2 1500 B"} <= by_size[1500]
        assert any(e.startswith("load ") for e in by_size[64])
        # The claims read the 64 B rows.
        assert {claim[1] for claim in ibcn_study.CLAIMS} <= by_size[64]
    full = ibcn.jobs(study_settings(ibcn, False), [1])
    paper = [j for j in full if j.experiment == "scenario1 paper"]
    assert paper and all(j.params["packet_bytes"] == 64 for j in paper)
    sensitivity = {d.aspect: d.sensitivity for d in ibcn.DEPARTURES}
    assert "scenario1 1500 B" in sensitivity["packet size"]
