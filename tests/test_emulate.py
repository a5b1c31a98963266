"""The emulation back-end (isthmus.emulate): what it refuses before anything starts, how
it translates commands to OpenFlow (both without a network), and, where the machine
can (root, Open vSwitch, ethtool: CI installs them), real runs: the same apps moving
real bytes over Open vSwitch, port counters that agree with the bytes, link rates the
traffic cannot beat, and nothing left behind, also after a SIGKILL and `--clean`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("os_ken", reason="the emulate extra (os-ken) is not installed")

from isthmus.control import commands  # noqa: E402
from isthmus.emulate import footprint as footprints  # noqa: E402
from isthmus.emulate.network import host_mac  # noqa: E402
from isthmus.emulate.run import emulate, write_run  # noqa: E402
from isthmus.emulate.scope import scope  # noqa: E402
from isthmus.emulate.seam import (  # noqa: E402
    EGRESS_TABLE,
    PROGRAM_TABLE,
    ROUTING_TABLE,
    OpenFlowSeam,
    Unsupported,
    cookie,
)
from isthmus.emulate.system import Capabilities, missing_tools  # noqa: E402
from isthmus.emulate.traffic import Traffic  # noqa: E402
from isthmus.scenario import ScenarioError, parse_scenario  # noqa: E402

ISTHMUS = str(Path(sys.executable).with_name("isthmus"))

ALL_QDISCS = frozenset({"htb", "pfifo", "bfifo", "tbf", "netem"})
NO_NETEM = frozenset({"htb", "pfifo", "bfifo", "tbf"})


def scenario(
    *,
    rate: str = "100Mbps",
    delay: str = "0s",
    size: str = "1MB",
    control: str = "",
    network: str = "",
    duration: str = "20s",
    traffic: str | None = None,
    queue: str = "100pkts",
    transport: str = "cubic",
) -> str:
    """Two leaves, two spines (a loop for floods), two hosts per leaf; every host sends
    one flow to another (a permutation)."""
    traffic = (
        traffic
        or f"""
[[traffic]]
kind = "flows"
pattern = "permutation"
arrivals = {{ kind = "batch" }}
sizes = {{ min = "{size}", max = "{size}" }}
stop = "1ms"
transport = "{transport}"
"""
    )
    return f"""
name = "emulation-test"
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 2
host_link = {{ rate = "{rate}", delay = "{delay}" }}
fabric_link = {{ rate = "{rate}", delay = "{delay}" }}
[network]
switch_queue = "{queue}"
host_queue = "100pkts"
{network}
{traffic}
{control}
[run]
duration = "{duration}"
stop_when = "flows_finished"
"""


def _scope(text: str, qdiscs=ALL_QDISCS, **kwargs):
    spec = parse_scenario(text)
    sim = spec.model_copy(update={"control": None}).build()
    kwargs = {"rate_scale": 1.0, "ignore_delay_below_ps": 0} | kwargs
    return scope(spec, sim, Capabilities(qdiscs, frozenset({"reno", "cubic"}), True), **kwargs)


# ---- refused before anything starts, by field ------------------------------------------


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (scenario(network='ecn_threshold = "20pkts"'), "network.ecn_threshold"),
        (scenario(network='routing = "spray"'), "network.routing: the emulation cannot spray"),
        (scenario(rate="10Gbps"), "--scale"),
        (
            scenario(
                traffic='[[traffic]]\nkind = "incast"\nreceiver = 0\nsenders = 2\n'
                'size = "10KB"\ntransport = "dcqcn"'
            ),
            "traffic[0].transport",
        ),
        (scenario() + '[tcp]\nmin_rto = "1ms"\n', "tcp.min_rto"),
    ],
)
def test_what_the_emulation_cannot_carry_out_is_refused_by_field(text, named):
    with pytest.raises(ScenarioError, match=named.replace("[", r"\[").replace("]", r"\]")):
        _scope(text)


@pytest.mark.parametrize(("app", "why"), [("ofpt", "subflow"), ("acc", "ECN"), ("ibcn", "BCN")])
def test_an_app_the_emulation_cannot_run_is_refused_with_the_reason(app, why):
    control = f'[control]\napps = [{{ name = "ecmp" }}, {{ name = "{app}" }}]\n'
    with pytest.raises(ScenarioError, match=rf"control\.apps\[1\]: .*{app}.*{why}"):
        _scope(scenario(control=control))


def test_mptcp_runs_as_the_kernels_with_its_subflows_and_is_refused_where_it_cannot():
    plan = _scope(scenario(size="2MB", transport="mptcp") + "[tcp]\nmptcp_subflows = 4\n")
    # The engine's subflows are NewReno: the kernel's reno, one per subflow.
    assert (plan.mptcp_subflows, plan.congestion_control) == (4, "reno")
    with pytest.raises(ScenarioError, match="at most 9 in all, not 12"):
        _scope(scenario(size="2MB", transport="mptcp") + "[tcp]\nmptcp_subflows = 12\n")
    with pytest.raises(ScenarioError, match="^control: MPTCP"):
        _scope(
            scenario(size="2MB", transport="mptcp", control='[control]\napps = [{ name = "ecmp" }]')
        )
    with pytest.raises(ScenarioError, match="tcp.min_rto"):
        _scope(scenario(size="2MB", transport="mptcp") + '[tcp]\nmin_rto = "1ms"\n')
    spec = parse_scenario(scenario(size="2MB", transport="mptcp"))
    sim = spec.build()
    off = Capabilities(ALL_QDISCS, frozenset({"reno"}), mptcp=False)
    with pytest.raises(ScenarioError, match="net.mptcp.enabled"):
        scope(spec, sim, off, rate_scale=1.0, ignore_delay_below_ps=0)


def test_ecn_marking_and_aqm_are_refused_naming_the_qdisc_the_kernel_lacks():
    with pytest.raises(ScenarioError, match="network.ecn_threshold: this kernel has no 'red'"):
        _scope(scenario(network='ecn_threshold = "20pkts"'))
    codel = scenario(network='aqm = { kind = "codel" }')
    with pytest.raises(ScenarioError, match="network.aqm: this kernel has no 'codel' qdisc"):
        _scope(codel)
    # Where the kernel has the qdisc, the refusal says what is missing is the translation.
    with pytest.raises(ScenarioError, match="does not translate codel to the kernel's 'codel'"):
        _scope(codel, ALL_QDISCS | {"codel"})
    # Drop-tail is what every port does anyway.
    assert _scope(scenario(network='aqm = { kind = "drop_tail" }')).shapes


def test_a_time_series_is_sampled_no_more_often_than_every_5_ms():
    assert _scope(scenario()).sample_interval_ps is None
    sampled = _scope(scenario() + '[telemetry]\nsample_interval = "5ms"\n')
    assert sampled.sample_interval_ps == 5_000_000_000
    with pytest.raises(ScenarioError, match=r"telemetry\.sample_interval: 4ms is shorter"):
        _scope(scenario() + '[telemetry]\nsample_interval = "4ms"\n')


TIMED = """
[[traffic]]
kind = "flows"
pattern = "permutation"
arrivals = { kind = "batch" }
duration = "300ms"
write_size = "64KiB"
stop = "1ms"
transport = "cubic"
"""


def test_timed_sources_are_the_flows_whose_size_is_not_known_yet():
    plan = _scope(scenario(traffic=TIMED))
    assert sorted(plan.timed) == [0, 1, 2, 3]
    assert {(t.duration_ps, t.write_size) for t in plan.timed.values()} == {
        (300_000_000_000, 65_536)
    }
    # Beside flows of a size, only the timed ones are.
    sized = TIMED.replace('duration = "300ms"\nwrite_size = "64KiB"', 'sizes = "websearch"')
    mixed = _scope(scenario(traffic=sized + TIMED))
    assert sorted(mixed.timed) == [4, 5, 6, 7]


def test_a_timed_source_finishes_when_its_receiver_reads_to_the_end_and_stays_finished():
    from isthmus.emulate.traffic import TimedSource

    sim = parse_scenario(scenario(traffic=TIMED)).build()
    traffic = Traffic(sim.flows(), "cubic", timed={0: TimedSource(300_000_000_000, 65_536)})
    assert traffic._record({"kind": "arrival", "flow": 0, "time_ns": 10}, int)
    finished = traffic._record(
        {"kind": "finished", "flow": 0, "time_ns": 500, "first_ns": 20, "bytes": 131_072}, int
    )
    assert [e.flow for e in finished] == [0] and traffic._finish(0) == 500
    # What its sender reports after (an error closing its socket, say) changes nothing.
    traffic._record(
        {"kind": "sent", "flow": 0, "time_ns": 600, "error": "OSError", "bytes": 131_072}, int
    )
    assert traffic._finish(0) == 500 and int(traffic._sizes()[0]) == 131_072
    # An error reported before its receiver's end means it did not finish.
    traffic._record({"kind": "error", "flow": 1, "error": "receiving: reset"}, int)
    traffic.timed[1] = TimedSource(300_000_000_000, 65_536)
    assert not traffic._record(
        {"kind": "finished", "flow": 1, "time_ns": 500, "first_ns": 20, "bytes": 65_536}, int
    )
    assert traffic._finish(1) is None


def test_a_link_delay_needs_netem_unless_a_stated_bound_leaves_it_out():
    text = scenario(delay="50us")
    with pytest.raises(ScenarioError, match="no 'netem' qdisc"):
        _scope(text, NO_NETEM)
    # Where the kernel has netem, every port delays its packets by its link's delay.
    kept = _scope(text, ALL_QDISCS)
    assert {shape.delay_ps for shape in kept.shapes.values()} == {50_000_000}
    # Below a stated bound the delay is left out, and the plan says so.
    left_out = _scope(text, NO_NETEM, ignore_delay_below_ps=60_000_000)
    assert left_out.delays_left_out_below_ps == 60_000_000
    assert {shape.delay_ps for shape in left_out.shapes.values()} == {0}
    assert len(left_out.shapes) == 16  # both ends of the 8 links


def test_a_delayed_port_delays_before_its_rate_and_queue_and_counts_the_queues_drops():
    from isthmus.emulate.network import LinkShape, Queue

    plain = LinkShape(10_000_000, Queue(100)).qdiscs()
    assert plain == [
        ["qdisc", "add", "root", "handle", "1:", "htb", "default", "1"],
        ["class", "add", "parent", "1:", "classid", "1:1", "htb", "rate", "10000000bit",
         "ceil", "10000000bit"],
        ["qdisc", "add", "parent", "1:1", "handle", "10:", "pfifo", "limit", "100"],
    ]  # fmt: skip
    delayed = LinkShape(1_000_000_000, Queue(30_000, in_bytes=True), delay_ps=50_000_000)
    netem, htb, rate, queue = delayed.qdiscs()
    # netem first, holding a 1 Gb/s link's 50 us in flight in 64 B frames (97) and more.
    assert netem[:7] == ["qdisc", "add", "root", "handle", "1:", "netem", "delay"]
    assert netem[7] == "50us" and int(netem[9]) >= 97 + 1000
    assert htb[:5] == ["qdisc", "add", "parent", "1:1", "handle"] and htb[5] == "2:"
    assert rate[3:6] == ["2:", "classid", "2:1"]
    assert queue[3] == delayed.queue_parent == "2:1" and queue[-3:] == ["bfifo", "limit", "30000"]


def test_rates_scale_down_by_the_stated_factor_and_queues_keep_their_unit():
    plan = _scope(scenario(rate="10Gbps", queue="30KB"), rate_scale=20)
    rates = {shape.rate_bps for shape in plan.shapes.values()}
    assert rates == {500_000_000}
    queues = {(shape.queue.limit, shape.queue.in_bytes) for shape in plan.shapes.values()}
    assert queues == {(100, False), (30_000, True)}  # hosts in packets, switches in bytes


# ---- commands to OpenFlow, without a network -------------------------------------------


class _Connection:
    from os_ken.ofproto import ofproto_v1_3 as ofproto
    from os_ken.ofproto import ofproto_v1_3_parser as ofproto_parser

    def set_xid(self, msg) -> None:
        msg.set_xid(1)


class _Channel:
    """Keeps what the seam sends, as a connected switch would receive it."""

    def __init__(self, switches):
        self.switches = {s: _Connection() for s in switches}
        self.sent: list[tuple[int, object]] = []

    def connection(self, node):
        return self.switches[node]

    def send(self, node, msg):
        self.sent.append((node, msg))
        return 1


def _seam():
    spec = parse_scenario(scenario())
    sim = spec.build()
    channel = _Channel([n for n, k in enumerate(sim.topology.nodes()["kind"]) if k == "switch"])
    seam = OpenFlowSeam(sim.topology, None, channel, Traffic(sim.flows(), "cubic"), 1.0, sim.seed)
    return sim, seam, channel


def test_an_entry_matching_a_flow_matches_its_packets_each_way_by_their_ports():
    sim, seam, channel = _seam()
    flows = sim.flows()
    flow = 0
    src, dst = int(flows["src"][flow]), int(flows["dst"][flow])
    sport, dport = int(flows["src_port"][flow]), int(flows["dst_port"][flow])
    switch = 0
    entry = seam.send(0, commands.InstallEntry(switch, 7, {"flow": flow, "output": 1}))
    both = [msg for _, msg in channel.sent]
    # One entry each way, one cookie: deleting the entry takes both.
    assert len(both) == 2 and {m.cookie for m in both} == {cookie(entry)}
    matches = [dict(m.match.items()) for m in both]
    assert {"eth_src": host_mac(src), "tcp_src": sport, "tcp_dst": dport}.items() <= matches[
        0
    ].items()
    assert {"eth_src": host_mac(dst), "tcp_src": dport, "tcp_dst": sport}.items() <= matches[
        1
    ].items()
    assert all(m.priority == 7 and m.table_id == PROGRAM_TABLE for m in both)
    # With the source given, only that direction.
    channel.sent.clear()
    seam.send(0, commands.InstallEntry(switch, 7, {"flow": flow, "src": src, "output": 1}))
    assert len(channel.sent) == 1
    assert dict(channel.sent[0][1].match.items())["tcp_src"] == sport


def test_ports_count_from_one_in_openflow_and_no_action_means_the_routing_table():
    _, seam, channel = _seam()
    seam.send(0, commands.InstallEntry(0, 3, {"in_port": 0, "dst": 2, "output": 1}))
    seam.send(0, commands.InstallEntry(0, 3, {"dst": 1}))
    to_port, to_routing = (msg for _, msg in channel.sent)
    assert dict(to_port.match.items())["in_port"] == 1
    # Out of a port: its OpenFlow number in register 0, then the egress table.
    set_port, egress = to_port.instructions[0].actions
    assert (set_port.key, set_port.value, egress.table_id) == ("reg0", 2, EGRESS_TABLE)
    assert to_routing.instructions[0].table_id == ROUTING_TABLE


def test_deleting_a_programs_first_entry_leaves_the_table_miss_entry_alone():
    # Regression: entry 0's cookie was 0, the table-miss entry's too, and deleting by
    # cookie took the table-miss entry along: every flow without an entry of its own
    # through that switch stalled.
    _, seam, channel = _seam()
    seam.set_miss(0, "route")
    entry = seam.send(0, commands.InstallEntry(0, 5, {"dst": 1, "output": 1}))
    assert entry == 0
    seam.send(0, commands.DeleteEntry(0, entry))
    miss, install, delete = (msg for _, msg in channel.sent)
    assert miss.priority == 0 and install.cookie == delete.cookie != miss.cookie
    assert delete.cookie_mask == (1 << 64) - 1


def test_a_command_the_emulation_cannot_carry_out_is_refused_by_name():
    _, seam, channel = _seam()
    with pytest.raises(Unsupported, match="PaceSubflow"):
        seam.send(0, commands.PaceSubflow(0, 0, 1_000_000))
    with pytest.raises(Unsupported, match="whole seconds"):
        seam.send(0, commands.InstallEntry(0, 1, {"dst": 1, "idle_timeout": 5 * 10**9}))
    assert not channel.sent


# ---- real runs ---------------------------------------------------------------------------


def _why_not_here() -> str | None:
    """Why this machine cannot emulate (None: it can): root, the tools, and the right
    to make a network namespace (a container may withhold it)."""
    if os.geteuid() != 0:
        return "emulation needs root"
    if missing_tools():
        return "emulation needs " + ", ".join(missing_tools())
    probe = f"isthmus-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"this machine refuses network namespaces: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False)
    return None


WHY_NOT_HERE = _why_not_here()
needs_machine = pytest.mark.skipif(WHY_NOT_HERE is not None, reason=str(WHY_NOT_HERE))


def _leftovers(tag: str) -> list[str]:
    found = (
        [n for n in os.listdir("/run/netns") if n.startswith(f"isthmus-{tag}")]
        if Path("/run/netns").is_dir()
        else []
    )
    found += [n for n in os.listdir("/sys/class/net") if n.startswith(f"ix{tag}")]
    if (footprints.STATE_DIR / f"{tag}.json").exists():
        found.append(f"record {tag}")
    return found


def _own_runs() -> set[str]:
    return {f.tag for f in footprints.recorded()}


@needs_machine
@pytest.mark.parametrize("app", ["l2_learning", "ecmp", "single_path"])
def test_the_same_apps_move_real_bytes_over_open_vswitch(app):
    miss = "controller" if app == "l2_learning" else "drop"
    # (ECMP and single_path install entries for every destination: nothing misses.)
    control = f'[control]\nmiss = "{miss}"\napps = [{{ name = "{app}" }}]\n'
    seen: list[str] = []
    run = emulate(
        parse_scenario(scenario(control=control)),
        before_run=lambda s: seen.append(s.network.footprint.tag),
    )
    flows = run.flows
    # Every flow's every byte arrived, over a network whose table-miss sends to the
    # controller (l2_learning answers) or drops (ECMP's entries carry everything).
    assert run.all_finished
    assert (flows["bytes_received"] == flows["size_bytes"]).all()
    assert (flows["finish_ps"] > flows["start_ps"]).all()
    if app == "l2_learning":
        learner = run.plane.controllers[0]
        assert learner.packet_ins > 0 and learner.floods > 0
    # A switch's loss counts the frames it sent up and was given back (the learner's
    # packet-ins and floods): none lost where nothing was sent again.
    losses = run.summary["frames_lost_in_switches"]
    assert len(losses) == 4 and all(lost >= 0 for lost in losses.values()), losses
    if int(flows["retransmissions"].sum()) == 0:
        assert run.summary["packets_lost"] == 0, losses
    # Each switch port towards a host sent that host at least the payload it received,
    # and no more than the payload with headers (66 of 1514 bytes a segment) plus the
    # host's own flow's acknowledgements.
    ports = run.ports
    kinds = run.plane.ports.kinds
    host_node = run.plane.ports.host_node
    for host, node in enumerate(host_node):
        row = np.flatnonzero(ports["peer_node"] == node)
        assert len(row) == 1
        tx = int(ports["tx_bytes"][row[0]])
        received = int(flows["bytes_received"][flows["dst"] == host].sum())
        sent = int(flows["size_bytes"][flows["src"] == host].sum())
        assert received <= tx <= received * 1514 / 1448 + sent * 0.06 + 20_000, (host, tx)
    assert kinds.count("switch") == 4
    assert _leftovers(seen[0]) == []


def test_single_path_gives_each_pair_of_hosts_one_next_hop_and_spreads_the_pairs():
    from isthmus.emulate.seam import single_path_port

    hops = [3, 4, 5]
    chosen = [single_path_port(hops, src, 40, switch=7, seed=1) for src in range(40)]
    assert chosen == [single_path_port(hops, src, 40, switch=7, seed=1) for src in range(40)]
    # Forty pairs over three ports: each used (a hash, not the first port every time).
    assert set(chosen) == set(hops)
    # Another switch chooses apart from this one.
    assert chosen != [single_path_port(hops, src, 40, switch=8, seed=1) for src in range(40)]


@needs_machine
def test_single_path_routing_sends_every_flow_of_a_pair_over_one_spine(tmp_path):
    rows = [f"{i},0,2,300000,0" for i in range(8)]
    header = "flow_id,src_host,dst_host,size_bytes,start_ps\n"
    (tmp_path / "pair.csv").write_text(header + "\n".join(rows) + "\n")
    traffic = '[[traffic]]\nkind = "flow_list"\nfile = "pair.csv"\ntransport = "cubic"\n'
    spec = parse_scenario(scenario(network='routing = "single_path"', traffic=traffic))
    run = emulate(spec, base=tmp_path)
    assert run.all_finished
    names, ports = run.plane.ports.names, run.ports
    leaf = names.index("leaf0")
    spines = [names.index(n) for n in names if n.startswith("spine")]
    up = [
        int(ports["tx_bytes"][(ports["node"] == leaf) & (ports["peer_node"] == spine)][0])
        for spine in spines
    ]
    # Eight flows of one pair: all 2.4 MB over one uplink, nothing over the other. (ECMP
    # spreads them: one run gave 1.57 and 0.94 MB; all on one uplink with probability
    # 1/128.)
    assert max(up) >= 8 * 300_000 and min(up) < 10_000, up


INCAST_ROUNDS = """
[[traffic]]
kind = "incast"
receiver = 0
senders = 3
size = "50KB"
rounds = 5
gap = "20ms"
transport = "cubic"
"""


def test_incast_rounds_add_the_later_rounds_flows_and_start_each_round_after_the_last():
    from isthmus.emulate.rounds import NOT_YET, plan_rounds

    spec = parse_scenario(scenario(traffic=INCAST_ROUNDS))
    sim = spec.build()
    flows, rounds = plan_rounds(spec, sim)
    senders = spec.traffic[0].senders_for(sim, 0)
    # The simulation's first round and four more, each a flow from every sender.
    assert len(flows["src"]) == 15 and len(sim.flows()["src"]) == 3
    assert flows["src"].tolist() == senders * 5 and set(flows["dst"].tolist()) == {0}
    assert (flows["start_ps"][3:] == NOT_YET).all() and (flows["start_ps"][:3] == 0).all()
    # Each later flow is its sender's first-round flow but for its port and start: one
    # subflow, a TCP flow, nothing delivered yet.
    for key in ("subflows", "datagram", "size_bytes", "dst_port", "finish_ps"):
        assert (flows[key][3:] == np.tile(flows[key][:3], 4)).all(), key
    assert (flows["subflows"] == 1).all()
    # No two flows share their ports (the kernel would refuse the second connection).
    assert len(set(zip(flows["src"].tolist(), flows["src_port"].tolist(), strict=True))) == 15
    # A round starts once its last response is in, `gap` after it, and not before.
    assert rounds.finished(0, 1_000) == ([], 1_000)
    assert rounds.finished(2, 2_000) == ([], 2_000)
    assert rounds.finished(1, 3_000) == ([3, 4, 5], 3_000 + 20_000_000)
    for flow in (3, 4, 5, 6, 7, 8, 9, 10, 11):
        rounds.finished(flow, 0)
    assert [rounds.finished(flow, 0)[0] for flow in (12, 13, 14)] == [[], [], []]


@needs_machine
def test_no_flow_beats_its_link_rate():
    rate_bps, size = 20_000_000, 1_000_000
    run = emulate(parse_scenario(scenario(rate="20Mbps", size="1MB")))
    fct_s = (run.flows["finish_ps"] - run.flows["start_ps"]) / 1e12
    # 1 MB of payload takes 0.4 s at 20 Mb/s before headers, which only add to it.
    assert (fct_s >= size * 8 / rate_bps).all(), fct_s
    # ... and a lone TCP flow on an idle path gets most of the link (headroom for slow start).
    assert (fct_s < 3 * size * 8 / rate_bps).all(), fct_s


def _start_long_run(tmp_path: Path) -> tuple[subprocess.Popen, footprints.Footprint]:
    """`isthmus emulate` of flows that take a minute, once its network and runners are
    up: its process and its record."""
    path = tmp_path / "long.toml"
    path.write_text(scenario(rate="1Mbps", size="8MB", duration="120s"))
    before = _own_runs()
    process = subprocess.Popen(
        [ISTHMUS, "emulate", str(path), "--out", str(tmp_path / "run")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        mine = [f for f in footprints.recorded() if f.tag not in before and f.owner == process.pid]
        # Two daemons and four runners: the traffic runs.
        if mine and len(mine[0].processes) >= 6:
            time.sleep(0.5)
            return process, mine[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    process.kill()
    raise AssertionError("the emulation did not come up within 60 s")


@needs_machine
def test_incast_rounds_run_one_after_another_from_the_same_senders():
    spec = parse_scenario(scenario(traffic=INCAST_ROUNDS))
    run = emulate(spec)
    assert run.all_finished
    flows = run.flows
    senders = spec.traffic[0].senders_for(spec.build(), 0)
    assert flows["src"].tolist() == senders * 5
    assert int(flows["bytes_received"].sum()) == 15 * 50_000
    starts = flows["start_ps"].reshape(5, 3) / 1e9
    finishes = flows["finish_ps"].reshape(5, 3) / 1e9
    # Each round starts 20 ms after the last response of the one before (and the
    # request's way through the emulation's pipes, about a millisecond), every sender
    # at once: here 10.1-10.2 ms after with a 10 ms gap, within 1 ms of each other.
    waited = starts[1:].min(axis=1) - finishes[:-1].max(axis=1)
    assert (waited >= 20).all() and (waited < 25).all(), waited
    assert (starts[1:].max(axis=1) - starts[1:].min(axis=1) < 5).all(), starts


@needs_machine
def test_a_timed_source_sends_for_its_duration_and_its_size_is_what_arrived():
    run = emulate(parse_scenario(scenario(traffic=TIMED, rate="20Mbps")))
    assert run.all_finished
    flows = run.flows
    fct_s = (flows["finish_ps"] - flows["start_ps"]) / 1e12
    # Each wrote for 0.3 s (what its socket took, some of it sent after) and finished
    # with what it wrote: no more than 20 Mb/s carries in 0.6 s, and no less than half
    # of what it carries in 0.3 s (its path shared at worst two ways). One run here:
    # 0.79-0.85 MB each, done 0.37-0.42 s after its start.
    assert (fct_s >= 0.3).all() and (fct_s < 0.6).all(), fct_s
    assert (flows["size_bytes"] == flows["bytes_received"]).all()
    sent = flows["bytes_received"]
    assert (sent > 0.3 * 20e6 / 8 / 2 * 0.8).all() and (sent <= 0.6 * 20e6 / 8).all(), sent
    # Whole writes: what arrived is a multiple of the write size.
    assert (flows["bytes_received"] % 65_536 == 0).all()


@needs_machine
def test_sigterm_takes_everything_down(tmp_path):
    process, record = _start_long_run(tmp_path)
    assert _leftovers(record.tag)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert b"SIGTERM" in err
    assert _leftovers(record.tag) == []
    assert not any(footprints.alive(pid, start) for pid, start in record.processes)
    assert not (tmp_path / "run").exists()


@needs_machine
def test_after_a_sigkill_clean_removes_that_run_and_nothing_else(tmp_path):
    bystander = "isthmus-ffff-n0"  # named like a run's, but on no record
    subprocess.run(["ip", "netns", "add", bystander], check=True)
    try:
        process, record = _start_long_run(tmp_path)
        process.kill()
        process.communicate()
        # Killed outright, it could remove nothing: its daemons and hosts are still there.
        assert _leftovers(record.tag)
        assert any(footprints.alive(p, s) for p, s in record.processes)
        done = subprocess.run(
            [ISTHMUS, "emulate", "--clean"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert f"namespace isthmus-{record.tag}" in done.stdout
        assert _leftovers(record.tag) == []
        assert not any(footprints.alive(p, s) for p, s in record.processes)
        assert not Path(record.run_dir).exists()
        assert Path(f"/run/netns/{bystander}").exists()
    finally:
        subprocess.run(["ip", "netns", "del", bystander], check=False)


@needs_machine
def test_a_run_folder_holds_the_flow_and_port_tables(tmp_path):
    run = emulate(parse_scenario(scenario(size="200KB")))
    folder = write_run(run, tmp_path / "run")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["flows_finished"] == summary["flows"] == 4
    assert summary["bytes_delivered"] == 4 * 200_000
    assert {p.name for p in folder.iterdir()} == {"summary.json", "flows.parquet", "ports.parquet"}
    # The folder reads as `isthmus run`'s do: a report, and SQL over its tables.
    report = subprocess.run(
        [ISTHMUS, "report", str(folder), "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "report.html").stat().st_size > 0
    query = subprocess.run(
        [ISTHMUS, "query", "select count(*) as n, min(slowdown) as s from flows", "--runs",
         str(folder), "--csv", str(tmp_path / "q.csv")],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert query.returncode == 0, query.stderr
    n, slowest = (tmp_path / "q.csv").read_text().splitlines()[1].split(",")
    # Four flows, none faster than alone on an idle network.
    assert int(n) == 4 and float(slowest) >= 1.0


@needs_machine
def test_four_cubic_flows_share_a_bottleneck_as_in_the_simulator():
    from isthmus.emulate.compare import side_by_side
    from isthmus.scenario import load_scenario

    path = Path(__file__).resolve().parents[1] / "examples" / "emulation" / "dumbbell-cubic.toml"
    spec = load_scenario(path)
    run = emulate(spec, base=path.parent)
    table = side_by_side(spec, [run], [spec.seed], path.parent)
    # No 1500 B packet carries more than 1460 B of payload, so 40 Mb/s carries at most
    # 38.9 Mb/s (Linux's 1448 B with timestamps in 1514 B frames: 38.3): both come
    # close, and both share it evenly four ways.
    # (Five emulated runs here gave fairness 0.976-0.995, one under a loaded machine 0.967.)
    for side in ("simulated", "emulated"):
        assert 36.0 < table["goodput_mbps"][side] <= 40 * 1460 / 1500, table["goodput_mbps"]
        assert table["fairness"][side] > 0.95, table["fairness"]
    assert abs(table["goodput_mbps"]["ratio"] - 1) < 0.05
    # The senders' kernels sent again at least every data packet the bottleneck (s0 to
    # s1) lost, and each loss put packets out of order at a receiver.
    names, ports = run.plane.ports.names, run.ports
    s0, s1 = names.index("s0"), names.index("s1")
    bottleneck = (ports["node"] == s0) & (ports["peer_node"] == s1)
    # (The forwarding holds still: every switch port's loss is exact, none negative.)
    assert (ports["lost_packets"] >= 0).all()
    lost = int(ports["lost_packets"][bottleneck].sum())
    assert lost > 0
    assert lost <= int(run.flows["retransmissions"].sum()) <= 2 * lost
    # Each switch's own loss, from its kernel's frames in and out, is its ports'.
    for node, name in enumerate(names):
        if run.plane.ports.kinds[node] == "switch":
            mine = int(ports["lost_packets"][ports["node"] == node].sum())
            assert run.summary["frames_lost_in_switches"][name] == mine, name
    assert int(run.flows["out_of_order"].sum()) >= lost
    assert run.summary["retransmissions"] == int(run.flows["retransmissions"].sum())
    # Both sides: every packet lost (all data packets here) was sent again.
    for side in ("simulated", "emulated"):
        assert table["retransmissions"][side] >= table["lost_packets"][side] > 0
    # Four CUBIC flows keep the 100-packet bottleneck queue mostly full in both
    # (simulated 84 packets on average; five emulated seeds 79-87), and it is the
    # bottleneck's queue that the comparison reads.
    for side in ("simulated", "emulated"):
        assert 60 < table["bottleneck_queue_mean_packets"][side] <= 100
        assert 95 <= table["bottleneck_queue_p99_packets"][side] <= 100
    _check_series(run, bottleneck, rate_bps=40_000_000, limit=100)


def _check_series(run, watched: np.ndarray, rate_bps: int, limit: int) -> None:
    """What a run's time series must hold: a grid of every port at each sample time,
    near the interval apart; queues within their limit; counters that only grow, up to
    the port table's at the end; and no more bytes leaving the `watched` port in any
    tenth of a second than its rate carries, its queue all but full at some sample."""
    series, ports = run.timeseries, run.ports
    count = len(ports["node"])
    times = series["time_ps"].reshape(-1, count)
    assert (times == times[:, :1]).all()
    assert (series["port_index"].reshape(-1, count) == np.arange(count)).all()
    stamps = times[:, 0].astype(np.int64)
    interval = run.summary["sample_interval_ps"]
    assert stamps[0] < interval and (np.diff(stamps) > 0).all()
    assert abs(np.median(np.diff(stamps)) / interval - 1) < 0.1
    queue = series["queue_packets"].reshape(-1, count)
    assert queue.max() <= limit and queue[:, watched].max() >= 0.9 * limit
    for column in ("tx_bytes", "drop_packets"):
        values = series[column].reshape(-1, count).astype(np.int64)
        assert (np.diff(values, axis=0) >= 0).all(), column
        assert (values[-1] <= ports[column].astype(np.int64)).all(), column
    # Over 100 ms a shaped link sends at most its rate (and the one frame htb lets
    # through ahead of it), and the bottleneck of four flows sends nearly that.
    sent = series["tx_bytes"].reshape(-1, count)[:, watched].sum(axis=1).astype(np.int64)
    window = int(round(100e9 / interval))
    seconds = (stamps[window:] - stamps[:-window]) / 1e12
    rates = (sent[window:] - sent[:-window]) * 8 / seconds
    assert rates.max() <= rate_bps * 1.05 and np.median(rates) > 0.9 * rate_bps


@needs_machine
def test_hedera_places_the_elephants_it_measures_on_an_emulated_fat_tree():
    from isthmus.scenario import load_scenario

    path = Path(__file__).resolve().parents[1] / "examples/emulation/fattree-stride-hedera.toml"
    run = emulate(load_scenario(path), base=path.parent)
    hedera = run.plane.controllers[0]
    # Every flow is an elephant (alone it would take its whole 10 Mb/s NIC): Hedera
    # measured each from the runners' byte counts and placed each once, and every
    # flow finished over the paths it was given.
    assert run.all_finished
    assert hedera.placements == 16
    assert not hedera.placed  # each placement's entries left with its flow
    # Its entries changed the switches' forwarding as the traffic ran, so their ports'
    # losses are not measured; the run's loss is, from those switches' own frames in
    # and out, and every packet lost was sent again.
    assert np.isnan(run.ports["lost_packets"]).any()
    lost = run.summary["packets_lost"]
    assert lost is not None and 0 <= lost <= run.summary["retransmissions"]


@needs_machine
def test_udp_streams_overflowing_a_link_lose_what_it_cannot_carry():
    from isthmus.emulate.compare import side_by_side
    from isthmus.scenario import load_scenario

    path = Path(__file__).resolve().parents[1] / "examples/emulation/udp-incast.toml"
    spec = load_scenario(path)
    run = emulate(spec, base=path.parent)
    table = side_by_side(spec, [run], [spec.seed], path.parent)
    # 32 Mb/s offered to a 20 Mb/s link: 3/8 lost (a little less: the queue holds some
    # at the end), and the link's 20 Mb/s delivered as payload: 1472 of each 1500 B.
    for side in ("simulated", "emulated"):
        assert 0.34 < table["stream_loss"][side] <= 0.375, table["stream_loss"]
        assert 18.5 < table["stream_goodput_mbps"][side] <= 20 * 1472 / 1500 * 1.01
    flows = run.flows
    # Every datagram sent is delivered or lost at a port, none dropped on sending by
    # the datapath: the ports' losses (what each switch handed a port less what it
    # sent) are the datagrams lost.
    assert run.summary["datapath_send_errors_logged"] == 0
    sent = int(flows["bytes_sent"].sum()) // 1472
    received = int(flows["bytes_received"].sum()) // 1472
    assert sent - received == int(run.ports["lost_packets"].sum()) > 0


@needs_machine
def test_a_link_taken_down_loses_what_is_sent_onto_it_until_it_comes_back():
    spec = parse_scenario(scenario(size="200KB", control='[control]\nmiss = "route"\n'))
    flows = spec.model_copy(update={"control": None}).build().flows()
    dst = int(flows["dst"][0])
    links = spec.topology.build(Path(".")).links()
    host_node = spec.topology.build(Path(".")).nodes()["host_node"][dst]
    link = int(np.flatnonzero((links["a"] == host_node) | (links["b"] == host_node))[0])
    states = []

    def cut(seam) -> None:
        # Down before the traffic starts, up again one second into it.
        seam.send(0, commands.SetLink(link, False))
        device, namespace = seam.network.device(host_node, 0)
        shown = ["ip", "link", "show", "dev", device]
        if namespace is not None:
            shown = ["ip", "netns", "exec", namespace, *shown]
        states.append(subprocess.run(shown, capture_output=True, text=True).stdout)
        seam.send(10**12, commands.SetLink(link, True))

    run = emulate(spec, before_run=cut)
    # The host's end is up, without a carrier: its cable is pulled at the switch.
    assert "<NO-CARRIER," in states[0] and ",UP>" in states[0], states
    finish_s = run.flows["finish_ps"] / 1e12
    # Every flow finished; those into and out of the cut host only after the link came
    # back (their SYNs, lost, go again after Linux's 1 s initial RTO), the others long
    # before.
    assert run.all_finished
    cut_off = (run.flows["dst"] == dst) | (run.flows["src"] == dst)
    assert cut_off.sum() == 2
    assert (finish_s[cut_off] > 1.0).all(), finish_s
    assert (finish_s[~cut_off] < 1.0).all(), finish_s


@needs_machine
def test_a_program_reads_counters_while_the_traffic_runs(monkeypatch):
    # Regression: a statistics reply awaited mid-run met the runners' report pipes in
    # the same poll and stopped the run with a TypeError.
    from isthmus.control.apps.l2_learning import L2Learning

    readings, rows = [], []
    learn = L2Learning.on_packet_in

    def on_packet_in(self, event):
        ports, entries = self.port_stats(), self.entry_stats()
        readings.append((self.now, int(ports["tx_bytes"].sum()), len(entries["entry"])))
        rows.append(ports)
        learn(self, event)

    monkeypatch.setattr(L2Learning, "on_packet_in", on_packet_in)
    control = '[control]\nmiss = "controller"\napps = [{ name = "l2_learning" }]\n'
    run = emulate(parse_scenario(scenario(control=control)))
    assert run.all_finished
    assert len(readings) == run.plane.controllers[0].packet_ins > 0
    # Counters only grow, and the learned entries with them.
    times, sent, entries = (list(column) for column in zip(*readings, strict=True))
    assert times == sorted(times) and sent == sorted(sent) and entries == sorted(entries)
    assert entries[-1] > 0
    # Every port of every node, hosts' too, in the simulator's order and columns. A
    # packet-in is of a frame some host sent, so hosts have sent by the first one.
    sim = parse_scenario(scenario()).build()
    expected = sim.ports()
    for ports in rows:
        for key in ("node", "port", "peer_node", "rate_bps"):
            assert (ports[key] == expected[key]).all(), key
        assert {"queue_packets", "queue_bytes", "drop_packets"} <= set(ports)
        hosts = np.asarray(sim.topology.nodes()["kind"])[ports["node"]] == "host"
        assert ports["tx_packets"][hosts].sum() > 0
        assert (ports["queue_packets"] <= 100).all()


def test_a_switch_whose_forwarding_changes_during_the_traffic_is_noted():
    _, seam, _ = _seam()
    seam.send(0, commands.InstallEntry(0, 5, {"dst": 1, "output": 1}))
    assert seam.changed_switches == set()  # before the traffic: the start's own
    seam._start_ns = 1
    seam.send(0, commands.InstallEntry(1, 5, {"dst": 1, "output": 1}))
    seam.send(0, commands.SetSelectGroup(2, 7, [0, 1], [1, 1]))
    assert seam.changed_switches == {1, 2}


def test_an_entry_matching_a_flow_each_way_leaves_once_with_both_ways_counters():
    from os_ken.ofproto import ofproto_v1_3 as ofp
    from os_ken.ofproto import ofproto_v1_3_parser as parser

    _, seam, channel = _seam()
    entry = seam.send(0, commands.InstallEntry(0, 7, {"flow": 0, "output": 1}))
    assert len(channel.sent) == 2

    def removed(packets: int, octets: int):
        msg = parser.OFPFlowRemoved(_Connection(), cookie=cookie(entry), priority=7,
                                    reason=ofp.OFPRR_DELETE, table_id=0, duration_sec=0,
                                    duration_nsec=0, idle_timeout=0, hard_timeout=0,
                                    packet_count=packets, byte_count=octets)  # fmt: skip
        return seam._events(0, msg)

    assert removed(10, 15_000) == []
    (event,) = removed(5, 330)
    assert (event.entry, event.reason, event.packets, event.bytes) == (entry, "deleted", 15, 15_330)


@needs_machine
def test_a_paced_flow_keeps_to_its_rate_and_a_held_one_waits_for_release():
    # Hosts on 100 Mb/s links; flow 0 paced at 10 Mb/s from the start, flow 1 held for
    # its first second, the others left alone.
    spec = parse_scenario(scenario(size="1MB", control='[control]\nmiss = "route"\n'))

    def steer(seam) -> None:
        seam.send(0, commands.Pace(0, 10_000_000))
        seam.send(0, commands.Hold(1))
        seam.send(10**12, commands.Release(1))

    run = emulate(spec, before_run=steer)
    assert run.all_finished and run.summary["flow_errors"] == []
    fct_s = (run.flows["finish_ps"] - run.flows["start_ps"]) / 1e12
    # 1 MB at 10 Mb/s is 0.8 s of payload (measured: 0.79, the kernel sending the
    # first segments before its pacing takes hold); unpaced it takes about a tenth.
    assert 0.75 <= fct_s[0] < 1.6, fct_s
    # Held, flow 1 sends at most its first 16 KB write before the release at 1 s.
    assert run.flows["finish_ps"][1] / 1e12 > 1.0, fct_s
    assert (fct_s[2:] < 0.5).all(), fct_s


@needs_machine
def test_a_watched_switch_counts_each_flow_by_the_ports_it_takes():
    # ECMP over two spines; both leaves watch their flows from before the traffic starts.
    spec = parse_scenario(scenario(size="1MB", control='[control]\nmiss = "route"\n'))
    seams: list[OpenFlowSeam] = []

    def watch(seam: OpenFlowSeam) -> None:
        seams.append(seam)
        for node, name in enumerate(seam.ports.names):
            if name.startswith("leaf"):
                seam.watch_flows(node)

    run = emulate(spec, before_run=watch)
    assert run.all_finished
    seam, flows = seams[0], run.flows
    ports = seam.ports
    leaves = [n for n, name in enumerate(ports.names) if name.startswith("leaf")]
    at = {}  # (leaf, flow, src) -> row
    for leaf in leaves:
        rows = seam.crossing_rows(leaf)
        for i in range(len(rows["flow"])):
            at[(leaf, int(rows["flow"][i]), int(rows["src"][i]))] = {
                k: int(v[i]) for k, v in rows.items()
            }

    def leaf_of(host: int) -> int:
        return ports.peer(ports.host_node[host], 0)[0]

    def port_to(node: int, peer: int) -> int:
        return ports.neighbours[node].index(peer)

    for flow in range(len(flows["src"])):
        src, dst = int(flows["src"][flow]), int(flows["dst"][flow])
        size = int(flows["size_bytes"][flow])
        for a, b, data in ((src, dst, True), (dst, src, False)):
            first, last = leaf_of(a), leaf_of(b)
            # The direction came in from its sender at the sender's leaf, and left to
            # its receiver at the receiver's leaf.
            row_first, row_last = at[(first, flow, a)], at[(last, flow, a)]
            assert row_first["in_port"] == port_to(first, ports.host_node[a])
            assert row_last["out_port"] == port_to(last, ports.host_node[b])
            if first != last:
                # Both leaves saw it go over the same spine.
                spine = ports.neighbours[first][row_first["out_port"]]
                assert ports.names[spine].startswith("spine")
                assert ports.neighbours[last][row_last["in_port"]] == spine
            if data:
                # Every payload byte, with at most a full segment's headers each.
                assert size <= row_first["bytes"] <= size * 1514 / 1448 + 10_000
            else:
                assert 0 < row_first["bytes"] < size / 10
            assert 0 < row_first["first_ps"] <= row_first["last_ps"] <= seam.now
    assert (
        len(at)
        == sum(
            (leaf_of(int(s)) == leaf)
            + (leaf_of(int(d)) == leaf)
            - (leaf_of(int(s)) == leaf_of(int(d)) == leaf)
            for s, d in zip(flows["src"], flows["dst"], strict=True)
            for leaf in leaves
        )
        * 2
    )


def test_a_watch_reports_a_direction_once_it_has_left_and_follows_its_newest_port():
    from isthmus.emulate import crossings

    ways = [crossings.Direction(0, 1, 2, 1024, 80, 6), crossings.Direction(0, 2, 1, 80, 1024, 6)]
    watch = crossings.FlowWatch(5, "s", 3, ways)
    assert len(watch.entries()) == 2 * 2 * 3

    def read(now, counts):
        return watch.update(
            [
                (crossings.cookie(i, port, egress=e), p, p * 1500)
                for (i, port, e), p in counts.items()
            ],
            now,
        )

    # In by port 0, not out yet: not crossed.
    assert read(10, {(0, 0, False): 3}) == []
    assert len(watch.rows()["flow"]) == 0
    (event,) = read(20, {(0, 0, False): 5, (0, 1, True): 5})
    assert (event.time, event.switch, event.flow, event.src, event.in_port) == (20, 5, 0, 1, 0)
    # Moved: its newest packets leave by port 2; the old port's count stays in the total.
    assert read(30, {(0, 0, False): 9, (0, 1, True): 5, (0, 2, True): 4}) == []
    rows = watch.rows()
    assert rows["out_port"].tolist() == [2] and rows["packets"].tolist() == [9]
    assert (rows["first_ps"].tolist(), rows["last_ps"].tolist()) == ([20], [30])
    # Quiet: the last time it was seen stays.
    read(40, {(0, 0, False): 9, (0, 1, True): 5, (0, 2, True): 4})
    assert watch.rows()["last_ps"].tolist() == [30]
    with pytest.raises(Exception, match="counting entries"):
        crossings.FlowWatch(5, "s", crossings.MAX_ENTRIES, ways)


@needs_machine
def test_diolkos_agents_steer_flows_on_real_switches_from_their_own_counters():
    # Each leaf's agent forecasts from that leaf's OpenFlow counters and moves the flows
    # leaving it between the two spines; stride 2 sends every flow across the spines.
    control = """
[[control.apps]]
name = "diolkos"
switches = ["leaf0", "leaf1"]
model = "ewma"
sample_period = "0.25s"
window = 2
smoothing = 1
train_after = 4
idle_timeout = "2s"
"""
    traffic = """
[[traffic]]
kind = "flows"
pattern = { kind = "stride", stride = 2 }
arrivals = { kind = "batch" }
sizes = { min = "3MB", max = "3MB" }
stop = "1ms"
transport = "cubic"
"""
    spec = parse_scenario(scenario(rate="10Mbps", control=control, traffic=traffic))
    run = emulate(spec)
    assert run.all_finished
    assert (run.flows["bytes_received"] == run.flows["size_bytes"]).all()
    agents = list(run.plane.agents.values())
    assert len(agents) == 2
    # Flows whose counters were checked against the port their agent chose: at least
    # one over both leaves (one leaf alone had 1-3 such flows a run, sometimes none).
    checked = 0
    for agent in agents:
        stats = agent.stats
        assert agent.trained and stats.rounds > stats.untrained_rounds > 0
        assert stats.moves > 0
        # Where a moved flow kept sending well after its move, the switch's own counters
        # show it leaving by the port the agent chose.
        rows = agent.switch.flows()
        latest = {
            (int(f), int(d)): (int(out), int(last))
            for f, d, out, last in zip(
                rows["flow"], rows["dst"], rows["out_port"], rows["last_ps"], strict=True
            )
        }
        for key, (_, port, moved_ps) in agent._moved.items():
            out, last = latest[key]
            if last > moved_ps + 500_000_000_000:
                assert out == port, (agent.switch.name, key)
                checked += 1
    assert checked > 0
    # The leaves' forwarding changed as the traffic ran: their ports' losses are not
    # measured (Open vSwitch's counters no longer add up per port); the spines' are.
    names, ports = run.plane.ports.names, run.ports
    leaf = np.isin(ports["node"], [names.index("leaf0"), names.index("leaf1")])
    spine = np.isin(ports["node"], [names.index("spine0"), names.index("spine1")])
    assert np.isnan(ports["lost_packets"][leaf]).all()
    assert (ports["lost_packets"][spine] >= 0).all()
    # Each leaf's own loss still is, from its kernel's frames in and out; the run's
    # loss takes it in place of its ports'. A spine's own is its ports'.
    losses = run.summary["frames_lost_in_switches"]
    assert losses["leaf0"] >= 0 and losses["leaf1"] >= 0, losses
    for name in ("spine0", "spine1"):
        mine = ports["lost_packets"][ports["node"] == names.index(name)]
        assert losses[name] == int(mine.sum()), (name, losses, mine)
    measured = int(ports["lost_packets"][~leaf].sum())
    assert run.summary["packets_lost"] == measured + losses["leaf0"] + losses["leaf1"]


@needs_machine
def test_mptcp_connections_open_their_subflows_and_deliver_every_byte():
    spec = parse_scenario(
        scenario(rate="20Mbps", size="2MB", transport="mptcp") + "[tcp]\nmptcp_subflows = 4\n"
    )
    run = emulate(spec)
    flows = run.flows
    assert run.all_finished and (flows["bytes_received"] == flows["size_bytes"]).all()
    # Each connection opened subflows to the ports its receiver announced (each with
    # ports of its own, which ECMP hashes apart), up to the four asked for.
    assert ((flows["subflows"] >= 2) & (flows["subflows"] <= 4)).all(), flows["subflows"]
    assert run.summary["mptcp_subflows"] == 4
    # An MPTCP connection's TCP_INFO is not one TCP's: no TCP counts are claimed.
    assert "retransmissions" not in flows and run.summary["retransmissions"] is None
