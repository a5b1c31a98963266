"""Same scenario, same seed: the same bytes, in another process too.

Two fresh Python processes (with different hash seeds, so any container whose order
depends on the process shows) run every scheduler under every AQM and every transport
on a congested fabric and write every flow and port column; the outputs must be equal
byte for byte."""

import hashlib
import os
import subprocess
import sys
import textwrap

RUNNER = textwrap.dedent(
    """
    import hashlib, sys
    import numpy as np
    from isthmus import Link, Simulation, Topology
    from isthmus.queues import (CoDel, DropTail, Drr, Fifo, Fq, Pie, Pifo, Ramp, Red, Step,
                                StrictPriority, Wfq)

    SCHEDULERS = [Fifo(), StrictPriority(kind="strict_priority", classes=2),
                  Drr(kind="drr", quanta=["1500B", "3000B"]), Wfq(kind="wfq", weights=[1, 3]),
                  Fq(kind="fq"), Pifo(kind="pifo", rank="remaining_size")]
    AQMS = [DropTail(), Red(kind="red", min="10pkts", max="40pkts", ecn=True),
            Ramp(kind="ramp", kmin="10pkts", kmax="40pkts", pmax=0.2),
            Step(kind="step", k="20pkts"), CoDel(kind="codel", target="20us", interval="200us"),
            Pie(kind="pie", target="20us", t_update="100us", max_burst="100us")]

    def digest(sim):
        h = hashlib.sha256()
        for table in (sim.flows(), sim.ports(), sim.queues(), sim.node_drops()):
            for name in sorted(table):
                h.update(name.encode())
                h.update(np.ascontiguousarray(table[name]).tobytes())
        return h.hexdigest()

    def fabric(**kw):
        topo = Topology.leaf_spine(2, 2, 4, host_link=Link("10Gbps", "1us"),
                                   fabric_link=Link("10Gbps", "1us"))
        return Simulation(topo, seed=7, switch_queue="60pkts", **kw)

    lines = []
    for scheduler in SCHEDULERS:
        for aqm in AQMS:
            sim = fabric(scheduler=scheduler, aqm=aqm)
            for i in range(12):
                flow = sim.add_tcp_flow(i % 4, 4 + (i * 3) % 4, "300KB", start=f"{i}us",
                                        transport="dctcp" if i % 2 else "tcp")
                sim.set_priority(flow, i % 2)
            for i in range(3):
                sim.add_udp_flow(i, 7, "3Gbps", size="200KB")
            sim.run("20ms", stop_when_flows_finish=True)
            lines.append(f"{scheduler.kind}/{aqm.kind} {digest(sim)}")
    sim = fabric(ecn_threshold="20pkts")
    for i in range(4):
        sim.add_tcp_flow(i, 4 + i, "500KB", transport="mptcp")
        sim.add_dcqcn_flow(4 + i, i, "500KB")
    sim.run("50ms", stop_when_flows_finish=True)
    lines.append(f"mptcp+dcqcn {digest(sim)}")
    sim = fabric(bcn={"q_eq": 10.0, "q_sc": 40.0})
    for i in range(4):
        sim.add_bcn_flow(i, 4, fair_share="2Gbps", size="300KB")
    sim.run("50ms", stop_when_flows_finish=True)
    lines.append(f"bcn {digest(sim)}")
    print("\\n".join(lines))
    """
)


def run_in_fresh_process(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_processes_give_identical_bytes_for_every_queueing_and_transport():
    first = run_in_fresh_process("1")
    second = run_in_fresh_process("2")
    lines = first.strip().splitlines()
    assert len(lines) == 6 * 6 + 2
    # Each configuration produced its own result (the runs differ from each other) ...
    assert len({line.split()[1] for line in lines}) > 25
    # ... and the second process reproduced every one of them exactly.
    assert hashlib.sha256(first.encode()).digest() == hashlib.sha256(second.encode()).digest(), [
        (a, b) for a, b in zip(lines, second.strip().splitlines(), strict=True) if a != b
    ]
