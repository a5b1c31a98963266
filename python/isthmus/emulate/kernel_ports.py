"""Every emulated port as its kernel counts it, in the simulator's port order (node by
node, port by port): the bytes and packets its device sent and received, the packets and
bytes waiting in its queue (the leaf qdisc), the packets that queue refused, and the
packets all its qdiscs hold. Read at once over netlink (`netlink`), one dump per
namespace, so the run can read them every few milliseconds for its time series
(`Series`) and a program can read a host's row as it reads a switch's."""

from __future__ import annotations

import numpy as np

from isthmus.emulate.netlink import ROOT, Namespace, handle
from isthmus.emulate.network import QUEUE_HANDLE, EmulatedNetwork
from isthmus.emulate.system import EmulationError

COUNTED = ("tx_bytes", "tx_packets", "rx_bytes", "rx_packets")
QUEUED = ("queue_packets", "queue_bytes", "drop_packets", "held_packets")
"""The leaf queue's waiting packets and bytes and the packets it refused; the packets
every qdisc of the port holds (a delaying netem's included)."""


class KernelPorts:
    def __init__(self, network: EmulatedNetwork):
        self.nodes: list[int] = []
        self.ports: list[int] = []
        self._namespaces: dict[str | None, Namespace] = {}
        self._where: list[tuple[Namespace, int]] = []
        try:
            for node, count in enumerate(network.ports):
                for port in range(count):
                    device, netns = network.device(node, port)
                    if netns not in self._namespaces:
                        self._namespaces[netns] = Namespace(netns)
                    namespace = self._namespaces[netns]
                    self._where.append((namespace, namespace.index(device)))
                    self.nodes.append(node)
                    self.ports.append(port)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for namespace in self._namespaces.values():
            namespace.close()
        self._namespaces.clear()

    def read(self, node: int | None = None) -> dict[str, np.ndarray]:
        """Each port's counters now: one row per port, in the simulator's order. With
        `node`, only its namespace is read and only its rows are filled (the others
        are 0): a switch agent reading its own switch pays for one dump, not one per
        host."""
        wanted = {
            id(namespace)
            for (namespace, _), owner in zip(self._where, self.nodes, strict=True)
            if node is None or owner == node
        }
        chosen = [n for n in self._namespaces.values() if id(n) in wanted]
        links = {id(n): n.links() for n in chosen}
        qdiscs = {id(n): n.qdiscs() for n in chosen}
        queue = handle(QUEUE_HANDLE)
        columns: dict[str, list[int]] = {key: [] for key in (*COUNTED, *QUEUED)}
        for (namespace, index), owner in zip(self._where, self.nodes, strict=True):
            if node is not None and owner != node:
                for values in columns.values():
                    values.append(0)
                continue
            link = links[id(namespace)].get(index)
            if link is None:
                where = namespace.name or "the switches' namespace"
                raise EmulationError(f"device {index} of {where} is gone from the kernel")
            for key in COUNTED:
                columns[key].append(getattr(link, key))
            held = [q for q in qdiscs[id(namespace)].get(index, []) if q.handle == queue]
            leaf = held[0] if held else None
            columns["queue_packets"].append(leaf.queue_packets if leaf else 0)
            columns["queue_bytes"].append(leaf.queue_bytes if leaf else 0)
            columns["drop_packets"].append(leaf.drops if leaf else 0)
            roots = [q for q in qdiscs[id(namespace)].get(index, []) if q.parent == ROOT]
            columns["held_packets"].append(sum(q.queue_packets for q in roots))
        return {key: np.array(values, dtype=np.uint64) for key, values in columns.items()}


SERIES_COLUMNS = ("queue_packets", "queue_bytes", "tx_bytes", "drop_packets", "ecn_marks")
"""What each sample holds per port, as the simulator's time series (results.py)."""


class Series:
    """Every port's queue and counters every `interval_ps` while the traffic runs, in
    the simulator's time-series layout. A sample is taken when the run loop reaches its
    time, so its time is when it was read, not the exact grid point; ports are read
    within the same fraction of a millisecond. `ecn_marks` are 0: the emulation marks
    nothing (an AQM that marks is refused, `scope`)."""

    def __init__(self, ports: KernelPorts, interval_ps: int):
        self.ports = ports
        self.interval_ps = interval_ps
        self.next_ps = 0
        self._times: list[int] = []
        self._rows: list[dict[str, np.ndarray]] = []

    def take(self, now_ps: int) -> None:
        self._rows.append(self.ports.read())
        self._times.append(now_ps)
        # The next grid point after now: a late sample does not bunch the ones after it.
        self.next_ps = (now_ps // self.interval_ps + 1) * self.interval_ps

    def table(self) -> dict[str, np.ndarray]:
        """time_ps, port_index and the sampled columns, one row per (sample, port)."""
        count = len(self.ports.nodes)
        columns = {
            "time_ps": np.repeat(np.array(self._times, dtype=np.uint64), count),
            "port_index": np.tile(np.arange(count, dtype=np.uint32), len(self._times)),
        }
        for key in SERIES_COLUMNS:
            if key == "ecn_marks":
                columns[key] = np.zeros(count * len(self._times), dtype=np.uint64)
            else:
                parts = [row[key] for row in self._rows]
                columns[key] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        return columns
