"""The no-silver-bullet study runs its experiments as the authors' ns-2 scripts do: their
round trips, their page sizes, their page clock and byte count, their slow-start
restart and their run lengths."""

import numpy as np
import pytest

from isthmus.simulation import Simulation
from isthmus.studies import nosilverbullet as nsb
from isthmus.workload import size_distribution


def _sim(link: str, config: str = "CoDel+FCFS") -> Simulation:
    sim = Simulation(
        nsb.topology(link),
        seed=1,
        host_queue=nsb.UNLIMITED,
        switch_queue=nsb.UNLIMITED,
        tcp=nsb.TCP,
        **nsb.CONFIGURATIONS[config],
    )
    if link == "lte":
        sim.set_link_trace("switch", "client", nsb.LTE_TRACE)
    return sim


@pytest.mark.parametrize(
    ("link", "rtt_s", "slack_s"),
    # Fixed: 2 x (74 + 1) ms, plus 1262 B and a 52 B ACK serialised at 15 Mbit/s.
    # LTE: the scripts' 150 ms back and 1 ms access each way (their trace link has no
    # delay), plus a wait of a few ms for the trace's next delivery opportunity.
    [("fixed", 0.150, 0.001), ("lte", 0.152, 0.015)],
)
def test_a_one_segment_page_takes_the_scripts_round_trip(link, rtt_s, slack_s):
    """A page of one segment on an open, idle connection ends one round trip after it
    starts: out to the client, and the ACK back to the server (the scripts' page end)."""
    sim = _sim(link)
    size = nsb.MSS
    flow = sim.add_message_flow(
        nsb.SERVER, nsb.CLIENT, [size] * 3, [10**11] * 3, stop=10**13, transport="tcp"
    )
    sim.run("5s")
    times = nsb._page_times(sim.messages(), sim.flows(), flow, 5 * 10**12, nsb.ack_way_back(link))
    assert len(times) == 3
    # The first page waits for the handshake; the later ones see only the round trip.
    assert all(rtt_s <= t <= rtt_s + slack_s for t in times[1:]), times


def test_the_page_sizes_are_the_scripts_allman_icsi_table():
    """The shipped CDF is the ns-2 table the scripts sample (entries 0..99,999 with
    probability 1e-5 each: mean 106,575.4 B); a page adds 16,384 B and is rounded up to
    whole segments, so its 90th percentile is 30 KB (the Facebook substitute's, 79 KB)."""
    table = size_distribution(str(nsb.SIZES_ICSI))
    assert table.mean_bytes == pytest.approx(106_575.40517, abs=0.01)
    pages = nsb.web_pages("icsi", 200_000, 7, 1)
    assert np.all(pages % nsb.MSS == 0) and pages.min() == 14 * nsb.MSS
    assert 29_000 < np.percentile(pages, 90) < 32_000
    assert np.percentile(nsb.web_pages("facebook", 200_000, 7, 1), 90) > 60_000


def test_bulk_throughput_counts_the_scripts_50_byte_headers():
    """A lone long flow fills the fixed 15 Mbit/s link with 1262 B packets; counted as
    the scripts count (1260 B a segment) that is 14.98 Mbit/s, payload alone 14.38."""
    sim = _sim("fixed", "drop-tail")
    flow = sim.add_tcp_flow(nsb.SERVER, nsb.CLIENT, "1GB", transport="tcp")
    sim.run("10s")
    before = int(sim.flows()["bytes_delivered"][flow])
    sim.run("30s")
    delivered = int(sim.flows()["bytes_delivered"][flow]) - before
    line = 15e6 / 8 / (nsb.MSS + 52) * nsb.MSS * 20  # payload bytes the link carries
    assert delivered == pytest.approx(line, rel=0.01)
    assert nsb.scripts_mbps(delivered, 20.0) == pytest.approx(15 * 1260 / 1262, rel=0.01)


def test_slow_start_restart_is_on_in_the_runs_as_in_ns2():
    """ns-2's TCP restarts its window after an idle RTO (slow_start_restart_ true, which
    the scripts keep): in 1b a typical page (15 segments) then takes two round trips or
    more; without the restart, one."""
    assert nsb.TCP.slow_start_after_idle
    median = {}
    for variant in ("", "no slow-start restart"):
        pages = [nsb.run_one("1b", "CoDel+FQ", s, 30.0, variant)["pages_s"] for s in (1, 2)]
        median[variant] = float(np.median(np.concatenate(pages)))
    assert median[""] > 1.8 * 0.150
    assert median["no slow-start restart"] < 1.3 * 0.150


def test_full_runs_last_as_long_as_the_scripts_and_take_the_seeds_given():
    """1a and 1b run 1000 s, the others 250 s; `--seeds 5` runs 5 seeds of every
    experiment, and the sensitivity variants rerun 1b's and 2a's pairs (the earlier
    100 s runs among them)."""
    jobs = nsb.jobs(nsb.FULL, [1, 2, 3, 4, 5])
    seconds = {j.experiment: j.params["seconds"] for j in jobs if not j.variant}
    assert seconds == {"1a": 1000.0, "1b": 1000.0} | dict.fromkeys(("2a", "2b", "3a", "3b"), 250.0)
    assert {j.seed for j in jobs} == {1, 2, 3, 4, 5}
    again = {(j.experiment, j.variant, j.scheme) for j in jobs if j.variant}
    assert again == {
        (e, v, c) for v in nsb.SENSITIVITY for e in ("1b", "2a") for c in nsb.EXPERIMENTS[e][0][:2]
    }
    assert {j.params["seconds"] for j in jobs if j.variant == "100 s runs"} == {100.0}
