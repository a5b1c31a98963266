"""ACC on fabrics of other sizes: the study's network takes its size (the testbed's
by default, so the study's figures stay), and learners pre-trained on one fabric,
loaded on another, are refused naming the switch and the fabric they fit."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchrl")

from isthmus.control import ControlPlane  # noqa: E402
from isthmus.control.apps.acc import Acc, model_states  # noqa: E402
from isthmus.studies import acc as study  # noqa: E402


def trained_learners(size: study.FabricSize) -> dict:
    """Learners made (untrained) on a fabric of `size`, as `read_models` returns them."""
    sim = study.network(1, size=size)
    plane = ControlPlane(sim)
    agents = plane.add_agents(Acc, seed=1, model="per-queue")
    plane.run("1us")
    return {a.switch.name: a.dqn.state_dict() for a in agents}


def test_the_study_network_takes_the_fabric_size_and_keeps_the_testbed_by_default():
    testbed = study.network(1)
    assert testbed.topology.num_hosts == 24
    names = testbed.topology.nodes()["name"]
    assert sum(n.startswith("leaf") for n in names) == 4
    assert sum(n.startswith("spine") for n in names) == 2
    wider = study.network(1, size=study.FabricSize(leaves=3, hosts_per_leaf=10))
    assert wider.topology.num_hosts == 30
    # Each leaf: its hosts, then two links to each spine.
    assert len(wider.ports("leaf0")["port"]) == 10 + 2 * 2


def test_learners_from_another_fabric_are_refused_naming_the_switch_and_that_fabric():
    """Trained where a leaf has 4 servers (8 queues), loaded on the testbed's (6
    servers, 10 queues): the engine's shapes (8, 15, 32) vs (10, 15, 32) said neither
    which switch nor why."""
    models = trained_learners(study.FabricSize(hosts_per_leaf=4))
    sim = study.network(1)
    plane = ControlPlane(sim)
    plane.add_agents(Acc, pretrained=models, seed=1, model="per-queue")
    with pytest.raises(ValueError) as refused:
        plane.run("1us")
    message = str(refused.value)
    assert "the pretrained learners for switch 'leaf0' do not fit it" in message
    assert "they tune 8 egress queues, this switch has 10 (10 ports x classes (0,))" in message
    assert "trained on a fabric where 'leaf0' has 8 queues" in message
    # Learners for this fabric load.
    plane = ControlPlane(study.network(1))
    agents = plane.add_agents(
        Acc, pretrained=trained_learners(study.TESTBED), seed=1, model="per-queue"
    )
    plane.run("1us")
    assert all(a.learners > 0 for a in agents)


def test_learners_that_observe_another_history_are_refused_by_name():
    models = trained_learners(study.TESTBED)
    plane = ControlPlane(study.network(1))
    plane.add_agents(Acc, pretrained=models, history=4, seed=1, model="per-queue")
    with pytest.raises(ValueError, match=r"they observe 3 intervals \(history\), this agent 4"):
        plane.run("1us")


def test_one_shared_network_serves_any_fabric_but_not_another_history():
    """The shared network (the default, one model for every switch as the paper installs)
    has no per-queue shapes: trained on one fabric it loads on another; a network that
    observes another history is refused by name."""
    plane = ControlPlane(study.network(1, size=study.FabricSize(hosts_per_leaf=4)))
    small = plane.add_agents(Acc, seed=1)
    plane.run("1us")
    trained = model_states(small)
    wider = ControlPlane(study.network(1))
    agents = wider.add_agents(Acc, pretrained=trained, seed=1)
    wider.run("1us")
    assert all(a.dqn is agents[0].dqn for a in agents)
    assert {a.switch.name: a.learners for a in agents}["leaf0"] == 10
    deeper = ControlPlane(study.network(1))
    deeper.add_agents(Acc, pretrained=trained, history=4, seed=1)
    with pytest.raises(ValueError, match=r"they observe 3 intervals \(history\), this agent 4"):
        deeper.run("1us")
