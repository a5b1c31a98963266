"""The baseline control apps, each run where it shows what it does.

    python examples/baselines.py

1. `single_path`, `ecmp` and `hedera` on a k=4 fat-tree (16 hosts, every link 1 Gb/s,
   100-packet buffers): every host sends one long DCTCP flow to the host 4 places on
   (stride 4, so every flow crosses the core), 40 ms. Single-path routing pins each
   host pair to one path, ECMP hashes each flow onto one, and both let flows collide on
   core links; Hedera polls flow rates every 5 ms (its 5 s scaled by 10^-3) and places
   each new elephant on a path with room by Global First Fit, keeping it there until the
   flow ends.
2. `l2_learning` on a ring of 5 switches with 2 hosts each (1 Gb/s): every table miss
   goes to the controller, which learns where hosts are and floods over a spanning
   tree, so the ring's loop never carries a flood; 10 flows of 100 KB between
   opposite hosts all finish.

A correct run prints, for (1), each app's aggregate goodput and drops: single path
9.4 Gb/s, ECMP 9.3 Gb/s (both lose about 40 % to collisions), Hedera 14.3 Gb/s of the
16 Gb/s the hosts could send; and for (2), every flow finished, 59 packet-ins, and no
packet caught in a loop.
"""

from __future__ import annotations

from isthmus import Link, Simulation, Topology
from isthmus.control import ControlPlane
from isthmus.control.apps import APPS

GIGABIT = Link("1Gbps", "1us")


def fabric_goodput(app: str) -> tuple[float, int]:
    """(aggregate goodput in Gb/s from 10 to 40 ms, drops) under control app `app`."""
    sim = Simulation(
        Topology.fat_tree(4, GIGABIT, GIGABIT), switch_queue="100pkts", ecn_threshold="30pkts"
    )
    for host in range(16):
        sim.add_tcp_flow(host, (host + 4) % 16, "1GB")
    plane = ControlPlane(sim)
    options = {"period": "5s", "time_scale": 1e-3} if app == "hedera" else {}
    plane.add(APPS[app](**options))
    plane.run("10ms")
    before = sim.flows()["bytes_delivered"].sum()
    plane.run("40ms")
    goodput = (sim.flows()["bytes_delivered"].sum() - before) * 8 / 0.03 / 1e9
    return float(goodput), int(sim.ports()["drop_packets"].sum())


def learning_ring() -> dict:
    """Flows between opposite hosts of a 5-switch ring under `l2_learning`."""
    sim = Simulation(Topology.ring(5, 2, GIGABIT, GIGABIT))
    for host in range(10):
        sim.add_tcp_flow(host, (host + 5) % 10, "100KB")
    plane = ControlPlane(sim)
    app = plane.add(APPS["l2_learning"]())
    finished = plane.run("200ms", stop_when_flows_finish=True)
    return {
        "finished": finished,
        "packet_ins": app.packet_ins,
        "loops": int(sim.node_drops()["ttl_drops"].sum()),
    }


if __name__ == "__main__":
    for name in ("single_path", "ecmp", "hedera"):
        gbps, drops = fabric_goodput(name)
        print(f"{name:12} {gbps:5.1f} Gb/s of 16, {drops} drops")
    ring = learning_ring()
    print(
        f"l2_learning  every flow finished: {ring['finished']}, "
        f"{ring['packet_ins']} packet-ins, {ring['loops']} packets caught in a loop"
    )
