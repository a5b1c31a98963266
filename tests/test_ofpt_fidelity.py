"""OFPT's baseline and controller as their papers describe them.

Hedera (Al-Fares et al., NSDI 2010): a placed elephant keeps its path and reservation
while it lives, only new elephants are placed, a placement's entries are in place before
the flow is diverted onto them, and a flow's end releases its reservation. OFPT: it
re-plans on traffic measured over at least half a polling period, and a migration takes
effect at every switch the new path shares with the old one, not only at the first hop.
"""

from __future__ import annotations

import numpy as np

from isthmus.control import ControlPlane
from isthmus.control.apps.hedera import Hedera
from isthmus.control.apps.ofpt import Ofpt
from isthmus.control.plane import Controller
from isthmus.simulation import Simulation
from isthmus.topology import Link, Topology
from isthmus.transport import TcpParams

TEN_GIGABIT = Link("10Gbps", "1us")


def entry_table(sim: Simulation) -> dict[tuple[int, int], int]:
    """(switch, entry) of every installed entry -> when it was installed (ps)."""
    entries = sim.entries()
    return dict(
        zip(
            zip(entries["switch"].tolist(), entries["entry"].tolist(), strict=True),
            entries["installed_ps"].tolist(),
            strict=True,
        )
    )


def stride_fat_tree(size: str, latency: str = "0s") -> tuple[Simulation, ControlPlane, Hedera]:
    """k=4 fat-tree, 10 Gb/s, every host sending one DCTCP flow of `size` 4 hosts on
    (every flow crosses the core); Hedera polling every 1 ms."""
    sim = Simulation(Topology.fat_tree(4, TEN_GIGABIT, TEN_GIGABIT), seed=1, ecn_threshold="65pkts")
    for h in range(16):
        sim.add_tcp_flow(h, (h + 4) % 16, size, transport="dctcp")
    plane = ControlPlane(sim, control_latency=latency)
    hedera = plane.add(Hedera(period="1s", time_scale=1e-3))
    return sim, plane, hedera


def test_a_placed_elephant_keeps_its_path_and_entries_while_it_lives():
    sim, plane, hedera = stride_fat_tree("1GB")
    # A second wave halves half the senders' demands: a round that re-placed every
    # elephant from scratch would move the first wave's.
    for h in range(8):
        sim.add_tcp_flow(h, (h + 9) % 16, "1GB", transport="dctcp", start="8ms")
    paths: list[dict] = []
    entries: set[tuple[int, int]] = set()
    for ms in range(2, 21, 2):
        plane.run(f"{ms}ms")
        now = set(entry_table(sim))
        assert entries <= now, f"{ms} ms: entries of live flows removed: {entries - now}"
        entries = now
        paths.append(dict(hedera.placed))
    seen: dict[int, list[int]] = {}
    for round_ in paths:
        for flow, placement in round_.items():
            assert seen.setdefault(flow, placement.path) == placement.path, f"flow {flow} moved"
    assert len(seen) >= 8, "most elephants should be placed within 20 polls"
    # Each flow placed once: one entry per switch of its path, none re-installed.
    assert hedera.placements == len(seen)
    assert len(entries) == sum(len(path) - 2 for path in seen.values())
    # No link is reserved beyond its capacity.
    for hop, bps in hedera.reserved().items():
        assert bps <= 10e9 * (1 + 1e-9), (hop, bps)


def test_a_placement_is_complete_before_the_flow_is_diverted_onto_it():
    sim, plane, hedera = stride_fat_tree("1GB", latency="100us")
    plane.run("6ms")
    assert hedera.placed
    installed = entry_table(sim)
    for flow, placement in hedera.placed.items():
        first, *rest = (installed[pair] for pair in placement.entries)
        # The first hop (where the flow leaves ECMP) goes in one control round trip
        # after every other entry of the path.
        assert all(first - t == 200_000_000 for t in rest), (flow, first, rest)
    # Nothing the flows sent was lost to a missing or half-installed path.
    drops = sim.node_drops()
    assert drops["rule_drops"].sum() == 0 and drops["unroutable"].sum() == 0


def test_a_flows_end_releases_its_reservation_and_entries():
    sim, plane, hedera = stride_fat_tree("6MB")
    placed_at_some_point = 0
    for ms in range(1, 40):
        plane.run(f"{ms}ms")
        placed_at_some_point = max(placed_at_some_point, len(hedera.placed))
        finished = np.flatnonzero(sim.flows()["finish_ps"] >= 0).tolist()
        assert not set(finished) & set(hedera.placed), "a finished flow still holds a reservation"
        if len(finished) == 16:
            break
    assert placed_at_some_point > 0 and len(finished) == 16
    assert hedera.placed == {} and hedera.reserved() == {}
    assert entry_table(sim) == {}, "the finished flows' entries were not deleted"


class _RecordingOfpt(Ofpt):
    """Ofpt noting, at every round, when it ran and over what window the background
    traffic it planned with was measured."""

    def on_start(self) -> None:
        super().on_start()
        self.log: list[tuple[int, int, np.ndarray]] = []

    def schedule(self) -> None:
        super().schedule()
        self.log.append((self.now, self.background_window, self._background_bps))


def test_ofpt_replans_only_on_traffic_measured_over_half_a_period_or_more():
    sim = Simulation(
        Topology.fat_tree(4, Link("1Gbps", "1us"), Link("1Gbps", "1us")),
        tcp=TcpParams(mptcp_subflows=4),
    )
    # Short flows (background on ECMP) from the start; long flows arriving 10 us apart
    # from 3.3 ms, each triggering a round microseconds after the one before.
    for h in range(8):
        sim.add_tcp_flow(h, h + 8, "60KB", start=f"{h * 100}us")
    for i in range(6):
        sim.add_tcp_flow(i, (i + 5) % 16, "5MB", transport="mptcp", start=f"{3300 + 10 * i}us")
    plane = ControlPlane(sim)
    ofpt = plane.add(_RecordingOfpt(period="1ms"))
    plane.run("8ms")
    times = [t for t, _, _ in ofpt.log]
    assert min(np.diff(times)) < ofpt.period / 2, "no round followed another quickly"
    for t, window, _ in ofpt.log:
        assert window == 0 or 2 * window >= ofpt.period, (t, window)
    # A round soon after a measurement plans with that measurement, not a new one.
    for (t0, _, bg0), (t1, _, bg1) in zip(ofpt.log, ofpt.log[1:], strict=False):
        if 2 * (t1 - t0) < ofpt.period:
            assert bg1 is bg0 or np.array_equal(bg1, bg0), (t0, t1)
    assert any(w > 0 for _, w, _ in ofpt.log)


def shared_switch_network() -> Topology:
    """h0 - s1 - s2 - {s3 | s4} - s5 - h1: the two paths share s1 and s2 (and s5); they
    part at s2, after the first hop."""
    link = Link("10Mbps", "100us")
    edges = [("h0", "s1"), ("s1", "s2"), ("s2", "s3"), ("s2", "s4"), ("s3", "s5")]
    edges += [("s4", "s5"), ("s5", "h1")]
    return Topology.custom(
        ["h0", "h1"], ["s1", "s2", "s3", "s4", "s5"], [(a, b, link) for a, b in edges]
    )


class _Move(Controller):
    """Pins flow 0 to the path over s3, then moves it over s4 with migrate."""

    OLD = ["h0", "s1", "s2", "s3", "s5", "h1"]
    NEW = ["h0", "s1", "s2", "s4", "s5", "h1"]

    def on_start(self) -> None:
        for switch in ("s1", "s2", "s3", "s4", "s5"):
            self.set_miss(switch, "drop")
        self.entries = self.install_path(0, self.OLD, priority=10)
        self.after("50ms", self.move)

    def move(self) -> None:
        self.entries = self.migrate(0, self.entries, self.NEW, priority=9)


def test_a_migration_takes_effect_at_a_shared_downstream_switch():
    sim = Simulation(shared_switch_network(), seed=1, host_queue="100pkts")
    sim.add_udp_flow(0, 1, "5Mbps", stop="150ms", arrivals="constant", packet_size="1500B")
    plane = ControlPlane(sim, control_latency="1ms")
    plane.add(_Move())
    index = {name: i for i, name in enumerate(plane.ports.names)}

    def tx(a: str, b: str) -> int:
        ports = sim.ports()
        chosen = (ports["node"] == index[a]) & (ports["peer_node"] == index[b])
        return int(ports["tx_bytes"][chosen].sum())

    # The move is issued at 50 ms; the new entries are in at 51 ms, the old first hop
    # and the old entry at s2 go at 53 ms; what had passed s2 is on s3's way by 55 ms.
    plane.run("55ms")
    old_before, new_before = tx("s2", "s3"), tx("s2", "s4")
    plane.run("150ms")
    assert tx("s2", "s3") == old_before, "the flow stayed on its old path past s2"
    assert tx("s2", "s4") - new_before > 0.9 * 5e6 / 8 * 0.095
    plane.run("200ms")
    flows = sim.flows()
    assert flows["packets_sent"][0] == flows["packets_delivered"][0], "packets lost"
    assert sim.node_drops()["rule_drops"].sum() == 0
