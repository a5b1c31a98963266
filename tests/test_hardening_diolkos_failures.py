"""The Diolkos study's failed and unfinished columns count the flows that could not get
through, by the flow table's own mark for an event that has not happened (-1)."""

from __future__ import annotations

import numpy as np

from isthmus.simulation import Simulation
from isthmus.studies import diolkos as study

SECONDS = 20.0


def _access_link(sim: Simulation, host: str) -> int:
    """The index of a host's only link."""
    names = sim.topology.nodes()["name"]
    links = sim.topology.links()
    (link,) = [
        i
        for i, (a, b) in enumerate(zip(links["a"], links["b"], strict=True))
        if host in (names[a], names[b])
    ]
    return link


def _study_1a_flows(h2_reachable: bool) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Study 1a's flows without control after SECONDS, H2's only link up or down, and
    which of them had time to run their FLOW_S (and a second to open and close) before
    the end."""
    sim, _, _ = study.study_network("1a", seed=1, seconds=SECONDS)
    sim.set_link_up(_access_link(sim, "h2"), h2_reachable)
    sim.run(f"{SECONDS}s")
    flows = sim.flows()
    return flows, flows["start_ps"] < (SECONDS - study.FLOW_S - 1) * study.PS


def test_a_flow_that_cannot_get_through_counts_as_failed_and_unfinished():
    flows, had_time = _study_1a_flows(h2_reachable=False)
    h2 = 1
    cut_off = had_time & ((flows["src"] == h2) | (flows["dst"] == h2))
    assert cut_off.sum() > 10, "the test needs flows to and from H2"
    counts = study.flow_failures(flows, had_time)
    # H2's flows have no path, so none delivers a byte; H3's have the whole network.
    assert counts == {"failed_flows": int(cut_off.sum()), "unfinished_flows": int(cut_off.sum())}
    assert study.flow_failures(flows, had_time & ~cut_off) == {
        "failed_flows": 0,
        "unfinished_flows": 0,
    }


def test_with_every_link_up_no_flow_fails():
    flows, had_time = _study_1a_flows(h2_reachable=True)
    assert had_time.sum() > 20
    assert study.flow_failures(flows, had_time) == {"failed_flows": 0, "unfinished_flows": 0}


def test_a_flow_delivering_but_not_done_is_unfinished_and_not_failed():
    flows = {
        "first_delivery_ps": np.array([0, 5, 5, -1]),
        "finish_ps": np.array([9, -1, 7, -1]),
    }
    # A first delivery at time 0 is a delivery: -1 alone means it never happened.
    assert study.flow_failures(flows, np.ones(4, dtype=bool)) == {
        "failed_flows": 1,
        "unfinished_flows": 2,
    }
