"""The reference benchmark: its figures, its JSON layout, and the definitions behind them."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from isthmus import Simulation, Topology
from isthmus.bench import run_benchmark
from isthmus.cli import app
from isthmus.metrics import flow_times, slowdown_summary


def test_small_benchmark_finishes_every_flow_with_dctcp_like_slowdowns():
    result = run_benchmark("small")
    assert result["flows"] == result["finished"] == 235
    s = result["slowdown"]
    assert sum(s[b]["n"] for b in ("lt100KB", "100KB-1MB", "gt1MB")) == s["all"]["n"] == 235
    # ns-3 on the identical scenario: mean 3.74, p99 17.96 (docs/benchmark.md).
    assert 3.0 < s["all"]["mean"] < 4.5
    assert 13 < s["all"]["p99"] < 22
    assert s["gt1MB"]["mean"] < s["lt100KB"]["mean"]
    assert result["packets_dropped"] < 100
    assert result["events"] > result["packet_hops"] > result["packets_delivered"]


def test_cli_bench_writes_the_shared_json_layout(tmp_path):
    out = tmp_path / "small.json"
    result = CliRunner().invoke(app, ["bench", "small", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    for key in ("size", "flows", "finished", "wall_s", "events", "packet_hops", "peak_rss_mb"):
        assert key in data
    assert set(data["slowdown"]) == {"all", "lt100KB", "100KB-1MB", "gt1MB"}
    ns = data["wall_s"] * 1e9 / data["packet_hops"]
    assert data["ns_per_packet_hop"] == pytest.approx(ns, rel=1e-3, abs=0.1)
    assert set(data["slowdown"]["all"]) >= {"mean", "p50", "p99"}
    assert CliRunner().invoke(app, ["bench", "huge"]).exit_code == 2


def test_an_uncontended_flow_has_slowdown_close_to_one():
    sim = Simulation(Topology.leaf_spine(2, 2, 2), ecn_threshold="65pkts")
    sim.add_tcp_flow(0, 3, "10MB")
    assert sim.run("100ms", stop_when_flows_finish=True)
    times = flow_times(sim)
    # Handshake (1 RTT) + slow start from 10 segments + headers (1500/1460): a little above 1.
    assert 1.0 < times["slowdown"][0] < 1.1
    assert times["ideal_ps"][0] == round(10_000_000 * 8 / 10e9 * 1e12) + sim.base_rtt(0, 3)


def test_slowdown_percentiles_are_nearest_rank_per_bucket():
    sizes = np.array([50_000, 60_000, 500_000, 2_000_000, 3_000_000])
    slowdown = np.array([1.0, 3.0, 2.0, 5.0, np.nan])
    s = slowdown_summary(sizes, slowdown)
    assert s["all"] == {"n": 4, "mean": 2.75, "p50": 2.0, "p99": 5.0, "p999": 5.0}
    assert s["lt100KB"] == {"n": 2, "mean": 2.0, "p50": 1.0, "p99": 3.0, "p999": 3.0}
    assert s["gt1MB"]["n"] == 1


@pytest.mark.parametrize("transport", ["tcp", "dctcp"])
def test_tcp_flows_from_python_deliver_every_byte(transport):
    sim = Simulation(Topology.leaf_spine(2, 2, 4), ecn_threshold="20pkts", switch_queue="40pkts")
    for src in range(4):
        sim.add_tcp_flow(src, 4, "2MB", transport=transport)  # a 4-to-1 incast
    assert sim.run("1s", stop_when_flows_finish=True)
    flows = sim.flows()
    assert np.all(flows["bytes_delivered"] == 2_000_000)
    marks = sim.ports()["ecn_marks"].sum()
    assert (marks > 0) == (transport == "dctcp")
    with pytest.raises(ValueError, match="transport must be one of"):
        sim.add_tcp_flow(0, 1, "1KB", transport="quic")


def _bench_script(name: str = "versus_htsim"):
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "benches" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_the_htsim_comparison_reads_both_simulators_and_compares_per_packet_hop(tmp_path):
    vs = _bench_script()
    ours = (
        "all finished: true; events 12248966; packet-hops 8701860; wall 0.988 s; "
        "12.40 M events/s; 113.5 ns per packet-hop; records cbdf30d11a3f3555"
    )
    theirs = (
        "Flow tcpsrc finished at 1\nRESULT flows=965 events=17404772 packet_hops=8701872 "
        "run_s=2.178 peak_rss_kb=6236 hostq=ecn\n"
    )
    assert vs.parse_isthmus(ours) == (0.988, 8701860)
    assert vs.parse_htsim(theirs) == (2.178, 8701872)
    with pytest.raises(ValueError, match="RESULT"):
        vs.parse_htsim("Flow tcpsrc finished at 1\n")
    isthmus = [vs.Run(t, 8_701_860, 5.0) for t in (1.2, 0.9, 1.0)]
    htsim = [vs.Run(t, 8_701_872, 6.1) for t in (2.0, 2.5, 2.2)]
    figures = vs.summarise(isthmus, htsim)
    assert figures["run_s"] == {"isthmus": 1.0, "htsim": 2.2}
    assert figures["htsim_over_isthmus"] == pytest.approx(2.2)
    assert figures["ns_per_packet_hop"]["isthmus"] == pytest.approx(1.0e9 / 8_701_860)
    # A process's own peak, not its launcher's (this test process is far above 40 MB).
    small = tmp_path / "small.sh"
    small.write_text("#!/bin/sh\nsleep 0.2\necho 'packet-hops 10; wall 0.5 s'\n")
    small.chmod(0o755)
    run = vs.run_measured([str(small)], vs.parse_isthmus)
    assert (run.run_s, run.packet_hops) == (0.5, 10)
    assert run.peak_mb < 20
    big = [
        sys.executable,
        "-c",
        "b = bytearray(60 << 20); b[::4096] = b'x' * len(b[::4096]); import time; "
        "time.sleep(0.3); print('packet-hops 1; wall 0.1 s')",
    ]
    assert vs.run_measured(big, vs.parse_isthmus).peak_mb >= 60
    command = vs.htsim_command(Path("/x/bench"), Path("f.csv"), (8, 64, 16))
    assert command[:3] == ["/x/bench", "-flows", "f.csv"]
    assert command[3:9] == ["-S", "8", "-L", "64", "-H", "16"]


def test_the_hop_cost_study_groups_steps_by_live_packets_and_spreads_flows_over_leaves():
    hc = _bench_script("hop_cost")
    text = "\n".join(
        f"phase until_ms {t}; packet-hops {h}; ns per packet-hop {ns}; "
        f"live packets {live}; open flows 3"
        for t, h, ns, live in [
            (2, 100_000, 60.0, 500),
            (4, 300_000, 80.0, 900),
            (6, 200_000, 100.0, 5_000),
            (8, 10, 900.0, 5_000),  # too few hops to time: left out
        ]
    )
    phases = hc.parse_phases(text + "\nall finished: true; ...")
    assert [p.live_packets for p in phases] == [500, 900, 5_000, 5_000]
    with pytest.raises(ValueError, match="phase"):
        hc.parse_phases("all finished: true")
    groups = hc.by_live_packets(phases, edges=(1_000, 2_000, 8_000))
    # hop-weighted: (100k x 60 + 300k x 80) / 400k
    assert groups == {1_000: pytest.approx(75.0), 8_000: pytest.approx(100.0)}

    flows = "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,9,100,5\n1,15,3,200,7\n"
    moved = hc.spread(flows, (2, 2, 8), (8, 8, 16)).splitlines()
    # leaf 0 stays leaf 0; leaf 1 goes to leaf 4 (stride 4) of 16-host leaves.
    assert moved[1:] == ["0,0,65,100,5", "1,71,3,200,7"]
    with pytest.raises(ValueError, match="smaller"):
        hc.spread(flows, (2, 2, 8), (2, 1, 16))
    assert hc.ports((2, 4, 8)) == 80 and hc.ports((8, 64, 16)) == 3_072
    # small's flows fit every fabric; medium's (16 hosts a leaf) every one from its own up.
    assert hc.fabrics_holding("small") == ["small", "medium", "large", "xl512", "xl1024"]
    assert hc.fabrics_holding("medium") == ["medium", "large", "xl512", "xl1024"]
