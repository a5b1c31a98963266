"""The scenario's topology made of real parts: a network namespace per host, an Open
vSwitch bridge per switch, a veth pair per link, and on each end's egress the link's
rate (htb) and its queue (pfifo, or bfifo for a limit in bytes), behind the link's
delay (netem) where it has one (`LinkShape.qdiscs`).

Addresses stand for host numbers, as in the simulator: host h has the MAC address
02:00:hh:hh:hh:hh and the IPv4 address 10.0.0.0/8 + h + 1, and every host knows every
other host's MAC address from the start (static neighbour entries), so no ARP crosses
the network and the only frames are the traffic's. IPv6 is off in the hosts for the same
reason. Offloads are off on every end (checksum, segmentation, receive coalescing): the
userspace datapath forwards each frame as it is, and a frame is one packet on the wire,
as in the simulator."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from isthmus.emulate.footprint import Footprint
from isthmus.emulate.ovs import OpenVSwitch
from isthmus.emulate.system import command
from isthmus.topology import Topology

OFFLOADS = ("tx", "rx", "tso", "gso", "gro")
MTU = 1500
MIN_FRAME = 64
NETEM_SPARE = 1000
"""Room in a delaying netem beyond what the link holds in flight."""
QUEUE_HANDLE = "10:"
"""The handle of every port's queue, the leaf qdisc (`LinkShape.qdiscs`)."""


def host_mac(host: int) -> str:
    return "02:00:" + ":".join(f"{(host >> shift) & 0xFF:02x}" for shift in (24, 16, 8, 0))


def host_of_mac(mac: str) -> int | None:
    """The host number of a host MAC address, None for any other address."""
    parts = mac.split(":")
    if parts[:2] != ["02", "00"]:
        return None
    return int("".join(parts[2:]), 16)


def host_ip(host: int) -> str:
    return str(ipaddress.IPv4Address("10.0.0.1") + host)


def datapath_id(node: int) -> int:
    """The OpenFlow datapath id of node `node`'s bridge (0 is not a valid id)."""
    return node + 1


def ofport(port: int) -> int:
    """The OpenFlow port number of local port `port` (OpenFlow numbers from 1)."""
    return port + 1


@dataclass(frozen=True)
class Queue:
    """An egress queue: `limit` packets, or bytes when `in_bytes`."""

    limit: int
    in_bytes: bool = False

    def qdisc(self) -> list[str]:
        return ["bfifo" if self.in_bytes else "pfifo", "limit", str(self.limit)]


@dataclass(frozen=True)
class LinkShape:
    """One direction of a link as the kernel shapes it: its rate, its queue, and the
    delay its packets take (0: none added)."""

    rate_bps: int
    queue: Queue
    delay_ps: int = 0

    @property
    def queue_parent(self) -> str:
        """The class the queue's qdisc hangs from (its drops are the port's)."""
        return "2:1" if self.delay_ps else "1:1"

    def qdiscs(self) -> list[list[str]]:
        """The `tc` commands (less `tc` and the device) that build this egress.

        Without a delay: htb at the root holds the link's rate, the queue under it.
        With one, netem at the root delays every packet first, then hands it to the
        rate and the queue: the same sum of delay, queueing and sending as the link's,
        with the queue's limit counting only packets waiting to be sent (under htb,
        netem's delay would overlap the queueing and its limit count the packets in
        flight). netem holds what a link of this rate has in flight over its delay,
        in the smallest frames, and more."""
        rate = [
            "class", "add", "parent", "{root}:", "classid", "{root}:1", "htb",
            "rate", f"{self.rate_bps}bit", "ceil", f"{self.rate_bps}bit",
        ]  # fmt: skip
        if not self.delay_ps:
            commands = [["qdisc", "add", "root", "handle", "1:", "htb", "default", "1"]]
            root = "1"
        else:
            in_flight = self.rate_bps * self.delay_ps // (8 * MIN_FRAME * 10**12)
            delay_us = f"{self.delay_ps / 1e6:g}us"
            commands = [
                ["qdisc", "add", "root", "handle", "1:", "netem", "delay", delay_us,
                 "limit", str(in_flight + NETEM_SPARE)],
                ["qdisc", "add", "parent", "1:1", "handle", "2:", "htb", "default", "1"],
            ]  # fmt: skip
            root = "2"
        commands.append([word.format(root=root) for word in rate])
        commands.append(
            [
                "qdisc",
                "add",
                "parent",
                self.queue_parent,
                "handle",
                QUEUE_HANDLE,
                *self.queue.qdisc(),
            ]
        )
        return commands


class EmulatedNetwork:
    def __init__(
        self,
        topology: Topology,
        footprint: Footprint,
        ovs: OpenVSwitch,
        shapes: dict[tuple[int, int], LinkShape],
        controller: str,
    ):
        """`shapes[(node, port)]`: the egress of each node's each port; `controller`:
        where bridges find their OpenFlow controller ("tcp:127.0.0.1:6653")."""
        nodes = topology.nodes()
        self.kinds: list[str] = list(nodes["kind"])
        self.host_node: list[int] = [int(n) for n in nodes["host_node"]]
        links = topology.links()
        self.links = list(zip(links["a"].tolist(), links["b"].tolist(), strict=True))
        self.footprint = footprint
        self.ovs = ovs
        self.shapes = shapes
        self.controller = controller
        self.ports: list[int] = [0] * len(self.kinds)
        self.link_ends: list[tuple[tuple[int, int], tuple[int, int]]] = []
        """Each link's two ends, (node, port) each, in the topology's link order."""

    def host_of_node(self, node: int) -> int:
        return self.host_node.index(node)

    def host_namespace(self, host: int) -> str:
        return self.footprint.namespace(self.host_node[host])

    def host_interface(self, node: int, port: int) -> str:
        return "eth0" if port == 0 else f"eth{port}"

    def bridge(self, node: int) -> str:
        return self.footprint.bridge(node)

    def up(self) -> None:
        """Builds hosts, bridges and links, in that order."""
        for node, kind in enumerate(self.kinds):
            if kind == "host":
                self._host(node)
            else:
                self._bridge(node)
        for a, b in self.links:
            self._link(a, self.ports[a], b, self.ports[b])
            self.link_ends.append(((a, self.ports[a]), (b, self.ports[b])))
            self.ports[a] += 1
            self.ports[b] += 1
        self._neighbours()
        self._connect()

    def _connect(self) -> None:
        """Points every bridge at the controller, last: a switch gives up on a
        controller that has not answered its hello within a second, and the controller
        answers once the network is built."""
        switches = [node for node, kind in enumerate(self.kinds) if kind != "host"]
        settings: list[str] = []
        for node in switches:
            name = self.bridge(node)
            settings += ["--", "set-controller", name, self.controller]
            # No inactivity probe: the controller answers echoes only while it polls,
            # and it does not poll while it reads counters or starts the runners.
            settings += ["--", "set", "controller", name, "connection_mode=out-of-band"]
            settings += ["--", "set", "controller", name, "inactivity_probe=0"]
        self.ovs.vsctl(*settings)

    def _host(self, node: int) -> None:
        namespace = self.footprint.namespace(node)
        # On record before it exists: whatever stops the run next, it is found.
        self.footprint.add_namespace(namespace)
        command("ip", "netns", "add", namespace, what=f"making host {node}'s namespace")
        command("ip", "link", "set", "lo", "up", what="host loopback", namespace=namespace)
        for setting in ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"):
            command("sysctl", "-q", "-w", setting, what="turning IPv6 off", namespace=namespace)

    def _bridge(self, node: int) -> None:
        name = self.bridge(node)
        self.footprint.add_interface(name)
        self.ovs.vsctl(
            "add-br", name,
            "--", "set", "bridge", name, "datapath_type=netdev", "protocols=OpenFlow13",
            "fail_mode=secure", "mcast_snooping_enable=false",
            f"other-config:datapath-id={datapath_id(node):016x}",
            "other-config:disable-in-band=true",
        )  # fmt: skip

    def _link(self, a: int, port_a: int, b: int, port_b: int) -> None:
        end_a, end_b = self.footprint.interface(a, port_a), self.footprint.interface(b, port_b)
        # Both ends, on record before they exist: the one left in this namespace is
        # deleted with its pair at once (deleting a namespace takes its ends with it
        # only some time later).
        self.footprint.add_interface(end_a)
        self.footprint.add_interface(end_b)
        veth = ("ip", "link", "add", end_a, "type", "veth", "peer", "name", end_b)
        command(*veth, what="making a link")
        for node, port, end in ((a, port_a, end_a), (b, port_b, end_b)):
            if self.kinds[node] == "host":
                self._into_host(node, port, end)
            else:
                self._onto_bridge(node, port, end)

    def _into_host(self, node: int, port: int, end: str) -> None:
        namespace = self.footprint.namespace(node)
        name = self.host_interface(node, port)
        host = self.host_of_node(node)
        command(
            "ip",
            "link",
            "set",
            end,
            "netns",
            namespace,
            "name",
            name,
            what="moving a link end into its host",
        )
        ip = ("ip", "link", "set", "dev", name)
        command(
            *ip,
            "address",
            host_mac(host),
            "mtu",
            str(MTU),
            "up",
            what="host interface",
            namespace=namespace,
        )
        command(
            "ip",
            "addr",
            "add",
            f"{host_ip(host)}/8",
            "dev",
            name,
            what="host address",
            namespace=namespace,
        )
        self._shape(name, self.shapes[(node, port)], namespace)

    def _onto_bridge(self, node: int, port: int, end: str) -> None:
        # Its own stack would send IPv6 neighbour discovery out of it, into the network.
        setting = f"net.ipv6.conf.{end}.disable_ipv6=1"
        command("sysctl", "-q", "-w", setting, what="turning IPv6 off on a switch port")
        command("ip", "link", "set", "dev", end, "mtu", str(MTU), "up", what="switch interface")
        # Open vSwitch rewrites a port's qdiscs to its QoS setting at every
        # reconfiguration, unless that setting is linux-noop: hands off.
        self.ovs.vsctl(
            "add-port", self.bridge(node), end,
            "--", "set", "interface", end, f"ofport_request={ofport(port)}",
            "--", "set", "port", end, "qos=@keep",
            "--", "--id=@keep", "create", "qos", "type=linux-noop",
        )  # fmt: skip
        self._shape(end, self.shapes[(node, port)], None)

    def _shape(self, device: str, shape: LinkShape, namespace: str | None) -> None:
        what = f"shaping {device}"
        command(
            "ethtool",
            "-K",
            device,
            *(word for o in OFFLOADS for word in (o, "off")),
            what=what,
            namespace=namespace,
        )
        for kind, verb, *rest in shape.qdiscs():
            command("tc", kind, verb, "dev", device, *rest, what=what, namespace=namespace)

    def set_link(self, link: int, up: bool) -> None:
        """Takes link `link` down (what is sent onto it is lost either way; a
        fast-failover group watching either end passes over it) or brings it back up.
        A switch's end goes down; a host's end stays up and loses its carrier, as a NIC
        does when the cable is pulled at the switch: the host keeps its address and
        routes, and TCP retransmits until the link is back (taking the host's device
        down would instead fail every connect at once)."""
        state = "up" if up else "down"
        for node, port in self.link_ends[link]:
            if self.kinds[node] == "host":
                continue
            device, _ = self.device(node, port)
            command("ip", "link", "set", "dev", device, state, what=f"link {link} {state}")

    def device(self, node: int, port: int) -> tuple[str, str | None]:
        """The interface of node `node`'s port `port` and its namespace (None: this
        one)."""
        if self.kinds[node] == "host":
            return self.host_interface(node, port), self.footprint.namespace(node)
        return self.footprint.interface(node, port), None

    def _neighbours(self) -> None:
        """Every host learns every other host's MAC address (one `ip -batch` per host)."""
        hosts = range(len(self.host_node))
        for host in hosts:
            batch = "".join(
                f"neigh replace {host_ip(other)} lladdr {host_mac(other)} dev eth0 nud permanent\n"
                for other in hosts
                if other != host
            )
            namespace = self.footprint.namespace(self.host_node[host])
            command("ip", "-batch", "-", what="static neighbours", namespace=namespace, stdin=batch)
