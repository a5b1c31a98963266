"""ACC: the stacked Double-DQN learners, the per-queue observations and rewards, the
switch agent, the PettingZoo environment and the study."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("pettingzoo")

from isthmus import Link, Simulation, Topology  # noqa: E402
from isthmus.control import ControlPlane  # noqa: E402
from isthmus.control.apps.acc import Acc, read_models, save_models  # noqa: E402
from isthmus.learning.ddqn import DoubleDqn, DqnSettings, GlobalMemory  # noqa: E402
from isthmus.learning.ecn_queues import (  # noqa: E402
    COUNTERS,
    NUM_TEMPLATES,
    QueueObserver,
    queue_term,
    templates,
)


def test_each_learner_of_a_group_learns_its_own_best_action():
    """Ten contextual bandits with different answers (learner i's best action for
    state s is (s + i mod 2) mod 4): stacked learners stay independent."""
    learners, states, actions = 10, 3, 4
    group = DoubleDqn(
        learners, states, actions, DqnSettings(gamma=0.0, epsilon_decay=0.99), seed=1, device="cpu"
    )
    rng = np.random.default_rng(0)
    answer = lambda s: (s + np.arange(learners) % 2) % actions  # noqa: E731
    for _ in range(800):
        s = rng.integers(states, size=learners)
        x = np.eye(states, dtype=np.float32)[s]
        a = group.act(x)
        group.remember(np.arange(learners), x, a, (a == answer(s)).astype(np.float32), x)
        group.train_step()
    for s in range(states):
        x = np.eye(states, dtype=np.float32)[np.full(learners, s)]
        assert (group.act(x, explore=False) == answer(np.full(learners, s))).all()
    assert group.epsilon == pytest.approx(0.02)


def test_the_target_network_follows_the_online_one_every_target_every_steps():
    group = DoubleDqn(2, 3, 2, DqnSettings(batch=4, target_every=5), seed=2, device="cpu")
    x = np.ones((2, 3), dtype=np.float32)
    for _ in range(4):
        group.remember(np.arange(2), x, np.array([0, 1]), np.array([1.0, 0.0]), x)
    differs = lambda: any(  # noqa: E731
        not torch.equal(a, b)
        for a, b in zip(group.online.parameters(), group.target.parameters(), strict=True)
    )
    for _ in range(4):
        group.train_step()
    assert differs(), "the target lags the online network between replacements"
    group.train_step()
    assert not differs(), "replaced on the fifth training step"


def test_a_saved_group_reloads_with_weights_only_and_answers_the_same(tmp_path):
    group = DoubleDqn(3, 4, 5, seed=3, device="cpu")
    path = tmp_path / "group.pt"
    torch.save(group.state_dict(), path)
    again = DoubleDqn(3, 4, 5, seed=99, device="cpu")
    x = np.random.default_rng(1).random((3, 4)).astype(np.float32)
    assert not np.allclose(again.q_values(x), group.q_values(x))
    again.load_state_dict(torch.load(path, weights_only=True))
    assert np.allclose(again.q_values(x), group.q_values(x))
    with pytest.raises(ValueError, match=r"saved model has .* = \(3, 4, 5\)"):
        DoubleDqn(2, 4, 5, device="cpu").load_state_dict(torch.load(path, weights_only=True))


def test_the_global_memory_shares_transitions_between_groups():
    a = DoubleDqn(2, 3, 2, seed=1, device="cpu")
    b = DoubleDqn(4, 3, 2, seed=2, device="cpu")
    x = np.full((2, 3), 0.5, dtype=np.float32)
    for _ in range(6):
        a.remember(np.arange(2), x, np.array([1, 1]), np.array([0.7, 0.7]), x)
    memory = GlobalMemory(capacity=100, seed=1)
    memory.push(a.recent(5))
    assert len(memory) == 10
    memory.pull_into(b, 3)
    assert b.stored.tolist() == [3, 3, 3, 3]
    assert np.allclose(b.rewards[:, :3], 0.7) and (b.taken[:, :3] == 1).all()


def test_observations_and_rewards_follow_their_formulas():
    """One 25 Gb/s queue and one 100 Gb/s queue over a 100 us interval."""
    rates = np.array([25e9, 100e9])
    observer = QueueObserver(rates, np.array([100e3, 400e3]), history=2, beta=0.5)
    zero = {k: np.zeros(2) for k in COUNTERS}
    observer.observe(zero, 0, np.zeros(2))
    # Queue 0 sent at line rate (312.5 KB in 100 us, 250 packets, 50 marked) with an
    # empty queue; queue 1 sent half its rate (500 packets of 1250 B) with a mean queue
    # at its reference: 320 packets waiting on average, so their sojourns sum to 320 x
    # the interval (Little's law), whatever the queue holds at the instant it is read.
    interval = 100_000_000
    counters = {
        "queue_bytes": np.array([5e6, 0.0]),
        "dequeued": np.array([250.0, 500.0]),
        "dequeued_bytes": np.array([312_500.0, 625_000.0]),
        "aqm_marks": np.array([50.0, 0.0]),
        "sojourn_ps": np.array([0.0, 320.0 * interval]),
    }
    states, rewards, utilisation = observer.observe(counters, interval, np.array([3, 0]))
    assert utilisation == pytest.approx([1.0, 0.5])
    # Queue term 1 - log2(1 + q / q_ref): 1 empty, 0 at the reference.
    assert rewards == pytest.approx([0.5 * 1.0 + 0.5 * 1.0, 0.5 * 0.5 + 0.5 * 0.0])
    latest = states[:, :-2].reshape(2, 2, 5)[:, -1]
    assert latest[0] == pytest.approx([0.0, 1.0, 0.2, 0.2, 3 / (NUM_TEMPLATES - 1)])
    assert latest[1][:4] == pytest.approx([1.0, 0.5, 0.0, 0.0])
    # What tells the queues apart, for one network serving both: rate / 100 Gb/s, class.
    assert states[:, -2:].tolist() == [[0.25, 0.0], [1.0, 0.0]]
    # Loaded: queue 0 sent at line rate, queue 1 half; a queue carrying only a trickle
    # (acknowledgements) would not be.
    assert observer.loaded.tolist() == [True, True]
    assert templates(100e9)[0] == (8000, 32000, 0.01) and len(templates(25e9)) == NUM_TEMPLATES
    # The queue term does not level off: 2 MB scores below 1 MB below 400 KB at 25 Gb/s.
    terms = queue_term(np.array([400e3, 1e6, 2e6]), 100e3)
    assert terms == pytest.approx([1 - np.log2(5), 1 - np.log2(11), 1 - np.log2(21)])
    assert terms[0] - terms[2] > 1.0


def _small_fabric(seed: int) -> Simulation:
    topology = Topology.leaf_spine(1, 2, 3, Link("25Gbps", "1us"), Link("100Gbps", "1us"))
    sim = Simulation(topology, seed=seed, switch_queue="2MB")
    for src in (0, 1, 2):
        sim.add_dcqcn_flow(src, 3, "3MB")
    return sim


@pytest.mark.parametrize("model", ["shared", "per-queue"])
def test_acc_agents_tune_busy_queues_and_skip_idle_ones(tmp_path, model):
    sim = _small_fabric(1)
    plane = ControlPlane(sim)
    agents = plane.add_agents(
        Acc, interval="50us", seed=1, settings=DqnSettings(batch=8), model=model
    )
    plane.run("2ms")
    by_name = {a.switch.name: a for a in agents}
    # leaf1's port to h3 is the bottleneck of the 3-to-1 incast; leaf0's host ports and
    # the spine carry traffic too, leaf1's other host ports nothing.
    busy, idle = by_name["leaf1"], by_name["spine0"]
    assert busy.decisions > 0 and busy.steps == 40
    assert busy.skipped > 0, "leaf1's idle host ports are skipped"
    # The shared network trains once an interval for every switch (the first agent to
    # step asks); per-queue learners train on each switch.
    assert sum(len(a.losses) for a in agents) >= (30 if model == "shared" else 1)
    assert len(busy.losses) > 0 or model == "shared", "it trains online"
    if model == "shared":
        assert len({id(a.dqn) for a in agents}) == 1, "one network for every switch"
    port = sim.port_towards("leaf1", "h3")
    learner = int(np.flatnonzero(busy.port == port)[0])
    kmin, kmax, pmax = busy.templates[learner][busy.template[learner]]
    ecn = busy.switch.ecn(port)
    assert (ecn["kmin"], ecn["kmax"], ecn["pmax"]) == (("bytes", kmin), ("bytes", kmax), pmax)
    assert idle.learners == 2
    path = tmp_path / "acc.pt"
    save_models(agents, path)
    saved = read_models(path)
    again = ControlPlane(_small_fabric(2))
    reloaded = again.add_agents(Acc, interval="50us", pretrained=saved, train=False, model=model)
    again.run("100us")
    x = np.random.default_rng(0).random((busy.learners, busy.observer.state_dim)).astype(np.float32)
    twin = {a.switch.name: a for a in reloaded}["leaf1"]
    assert np.allclose(twin.dqn.q_values(x), busy.dqn.q_values(x))
    other = "per-queue" if model == "shared" else "shared"
    with pytest.raises(ValueError, match=f"this agent uses .*give model='{model}'"):
        mismatched = ControlPlane(_small_fabric(3))
        mismatched.add_agents(Acc, pretrained=saved, model=other)
        mismatched.run("100us")
    if model == "per-queue":
        with pytest.raises(ValueError, match="no learners for switch 'spine0'; they have leaf1"):
            third = ControlPlane(_small_fabric(3))
            third.add_agents(Acc, pretrained={"leaf1": saved["leaf1"]}, model=model)
            third.run("100us")
    with pytest.raises(ValueError, match="interval must be a positive duration"):
        ControlPlane(_small_fabric(4)).add_agents(Acc, interval="0s")
    with pytest.raises(ValueError, match="has no queue of classes"):
        fourth = ControlPlane(_small_fabric(5))
        fourth.add_agents(Acc, classes=(5,))
        fourth.run("100us")


def test_the_queue_environment_passes_pettingzoos_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    from isthmus.rl.multi_agent import EcnQueuesEnv

    env = EcnQueuesEnv(_small_fabric, interval="50us", episode="600us")
    assert len(env.possible_agents) == 2 * 4 + 2
    parallel_api_test(env, num_cycles=20)
    observations, _ = env.reset(seed=4)
    first = dict(observations)
    steps = 0
    while env.agents:
        env.step({a: 5 for a in env.agents})
        steps += 1
    assert steps == 12
    again, _ = env.reset(seed=4)
    assert all(np.array_equal(first[a], again[a]) for a in first)


def test_the_study_runs_and_compares_acc_with_both_static_settings(monkeypatch, tmp_path):
    from isthmus.experiments import run_study
    from isthmus.studies import acc as study

    monkeypatch.setitem(study.QUICK, "episodes", 2)
    monkeypatch.setitem(study.QUICK, "message_ms", 20.0)
    monkeypatch.setitem(study.QUICK, "learn_ms", 100.0)  # tests/test_acc_learns.py: in full
    results = run_study(study, quick=True, seeds=[1], folder=tmp_path / "s")
    table = study.table(results)
    rows = {row[0]: row for row in table.rows}
    assert "heterogeneous | ACC" in rows and "heterogeneous | SECN1" in rows
    assert "heterogeneous | best static" in rows and "heterogeneous ToR downlinks | ACC" in rows
    assert "messages 60% queue KB mean / std | best static" in rows
    assert "RDMA/TCP 7:1, RDMA share % | queue KB | Gb/s | best static" not in rows
    sweeps = results.select(experiment="template sweep")
    assert len(sweeps) == 2 and all(len(s["scores"]) == 32 for s in sweeps)
    assert rows["best static template: heterogeneous | messages load 60%"][1].startswith("#")
    assert rows["messages 60% queue KB mean / std | SECN2"][3] == "37.5 / 109.3"
    (training,) = results.select(experiment="training")
    episodes_s = 2 * study.QUICK["episode_ms"] / 1e3
    assert len(training["curve"]) == 2 and training["simulated_s"] == pytest.approx(episodes_s)
    assert len(table.claims) == 10
    assert sum("than the best static" in c.statement for c in table.claims) == 2
    # One seed: no claim gets a verdict, the learnability check included.
    assert all(c.holds is None for c in table.claims)
    (learned,) = results.select(experiment="learnability")
    assert len(learned["static"]) == 32 and "bottleneck reward | ACC greedy" in rows
    assert "RDMA/TCP 7:1, RDMA share % | queue KB | Gb/s | ACC" in rows
    drawn = study.figures(results, tmp_path)
    assert [p.name for p in drawn] == ["acc_learning.png", "acc_queues.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in drawn)


def test_acc_runs_from_a_scenario_file():
    from isthmus.scenario import parse_scenario

    spec = parse_scenario(
        """
name = "acc"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 2
[[traffic]]
kind = "incast"
receiver = 0
senders = 3
size = "500KB"
transport = "dcqcn"
[run]
duration = "2ms"
[control]
[[control.apps]]
name = "acc"
interval = "100us"
settings = { batch = 8, hidden = 16 }
"""
    )
    sim = spec.build()
    spec.execute(sim)
    agents = list(sim.control_plane.agents.values())
    assert len(agents) == 3 and all(isinstance(a, Acc) and a.steps == 20 for a in agents)
    assert all(a.dqn.settings.hidden == 16 for a in agents)
    bad = ControlPlane(_small_fabric(1))
    with pytest.raises(ValueError, match="settings has no field 'hiden'"):
        bad.add_agents(Acc, settings={"hiden": 16})


def test_the_same_seed_gives_the_same_acc_run():
    def once() -> tuple[list, list]:
        sim = _small_fabric(3)
        plane = ControlPlane(sim)
        agents = plane.add_agents(Acc, interval="50us", seed=7, settings=DqnSettings(batch=8))
        plane.run("1ms")
        return (
            [a.template.tolist() for a in agents],
            sim.flows()["finish_ps"].tolist(),
        )

    assert once() == once()
