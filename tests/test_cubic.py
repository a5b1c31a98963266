"""CUBIC (RFC 9438) in the engine: after a congestion event the window follows
W(t) = C (t - K)^3 + W_max; slow start ends at HyStart's delay rise instead of
overrunning the bottleneck."""

import pytest

from isthmus import Link, Simulation, Topology
from isthmus.transport import TcpParams

C = 0.4
MSS = 1460


def long_fat_path() -> tuple[Simulation, int]:
    """One CUBIC flow, 100 Mb/s bottleneck, 100 ms RTT, a BDP of buffer (856 segments
    of path, 900 of queue), Linux's timers, a receive window that never limits."""
    topo = Topology.leaf_spine(
        1, 2, 1, host_link=Link("1Gbps", "12500us"), fabric_link=Link("100Mbps", "12500us")
    )
    tcp = TcpParams.for_profile("linux", ack_every=1, rwnd="16MiB")
    sim = Simulation(topo, switch_queue="900pkts", host_queue="2000pkts", tcp=tcp)
    return sim, sim.add_tcp_flow(0, 1, "10GB", transport="cubic")


@pytest.fixture(scope="module")
def trace():
    sim, flow = long_fat_path()
    rows = []
    for step in range(1, 601):
        sim.run(f"{step * 100}ms")
        w = sim.tcp_window(flow)
        rows.append((step / 10, w["cwnd_bytes"] / MSS, w["w_max"], w["k_s"], w["epoch_ps"]))
    return rows


def test_hystart_ends_slow_start_before_the_bottleneck_overflows(trace):
    # The first epoch begins without a loss, where HyStart stopped slow start: below
    # the 856-segment path plus the 900-segment queue.
    first = next(r for r in trace if r[4] is not None)
    assert 300 < first[2] < 1756, first


def test_the_window_follows_the_cubic_curve_after_a_congestion_event(trace):
    # The last epoch with a loss before it (K > 0): every sample from half a second in
    # until the next congestion event lies on C (t - K)^3 + W_max.
    epochs = [r for r in trace if r[4] is not None and r[3] > 0]
    assert epochs, "no congestion epoch in 60 s"
    w_max, k, epoch = epochs[-1][2], epochs[-1][3], epochs[-1][4]
    checked = 0
    for time_s, cwnd, *_ in (r for r in epochs if r[4] == epoch):
        t = time_s - epoch / 1e12
        if t < 0.5:
            continue
        expected = C * (t - k) ** 3 + w_max
        assert abs(cwnd - expected) / expected < 0.05, (t, cwnd, expected)
        checked += 1
    assert checked >= 30, checked


def test_cubic_takes_the_larger_share_from_newreno_on_a_long_rtt_path():
    # Both flows through one 100 Mb/s bottleneck at 100 ms RTT, Linux hosts (SACK):
    # CUBIC's growth does not slow with the RTT as Reno's does.
    topo = Topology.leaf_spine(
        1, 2, 2, host_link=Link("1Gbps", "12500us"), fabric_link=Link("100Mbps", "12500us")
    )
    tcp = TcpParams.for_profile("linux", rwnd="16MiB")
    sim = Simulation(topo, switch_queue="900pkts", host_queue="2000pkts", tcp=tcp)
    cubic = sim.add_tcp_flow(0, 2, "10GB", transport="cubic")
    reno = sim.add_tcp_flow(1, 3, "10GB", transport="tcp")
    sim.run("10s")
    before = sim.flows()["bytes_delivered"].copy()
    sim.run("60s")
    mbps = (sim.flows()["bytes_delivered"] - before) * 8 / 50 / 1e6
    assert mbps[cubic] > 1.15 * mbps[reno], mbps
    assert mbps[cubic] + mbps[reno] > 85, mbps  # the bottleneck stays busy
