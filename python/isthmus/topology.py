"""Topologies: the datacenter shapes of the literature, or any graph you list.

Hosts are numbered 0, 1, ... in rack order (host h of a leaf-spine with H hosts per
leaf sits on leaf h // H); that number is the host's address in flows and records.
Each switch's ports are numbered in the order its links were added: host-facing
links first, then uplinks.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from isthmus import _core
from isthmus.units import rate_bps, time_ps


@dataclass(frozen=True)
class Link:
    """Rate and one-way propagation delay of a full-duplex link, each with its unit
    ("10Gbps", "1us"): a bare number here is refused, since Link("1Gbps", 10) would
    otherwise mean 10 picoseconds."""

    rate: str = "10Gbps"
    delay: str = "1us"

    def __post_init__(self) -> None:
        for name, value, example in (("rate", self.rate, "10Gbps"), ("delay", self.delay, "1us")):
            if not isinstance(value, str):
                raise ValueError(
                    f"Link {name} {value!r} has no unit; write it as a string with one, e.g. "
                    f"{example!r} (a bare number would be read in "
                    f"{'bit/s' if name == 'rate' else 'picoseconds'})"
                )
        self.as_core()

    def as_core(self) -> tuple[int, int]:
        return rate_bps(self.rate), time_ps(self.delay)


class Topology:
    """A network graph of hosts and switches, built by one of the constructors."""

    def __init__(self, core: _core.Topology):
        self._core = core

    @classmethod
    def leaf_spine(
        cls,
        spines: int,
        leaves: int,
        hosts_per_leaf: int,
        host_link: Link = Link("10Gbps", "1us"),
        fabric_link: Link = Link("40Gbps", "1us"),
        links_per_pair: int = 1,
    ) -> Topology:
        """Every leaf wired to every spine by `links_per_pair` parallel links (ECMP
        spreads flows over all of them); hosts h0, h1, ... on leaves in order."""
        if isinstance(links_per_pair, bool) or not isinstance(links_per_pair, int):
            raise ValueError(f"links_per_pair must be a whole number, got {links_per_pair!r}")
        if links_per_pair < 1:
            raise ValueError(f"links_per_pair must be at least 1, got {links_per_pair}")
        if links_per_pair == 1:
            return cls(
                _core.Topology.leaf_spine(
                    spines, leaves, hosts_per_leaf, host_link.as_core(), fabric_link.as_core()
                )
            )
        hosts = [f"h{i}" for i in range(leaves * hosts_per_leaf)]
        links = [(h, f"leaf{i // hosts_per_leaf}", host_link) for i, h in enumerate(hosts)]
        links += [
            (f"leaf{leaf}", f"spine{spine}", fabric_link)
            for leaf in range(leaves)
            for spine in range(spines)
            for _ in range(links_per_pair)
        ]
        switches = [f"spine{i}" for i in range(spines)] + [f"leaf{i}" for i in range(leaves)]
        return cls.custom(hosts, switches, links)

    @classmethod
    def fat_tree(cls, k: int, host_link: Link = Link(), fabric_link: Link = Link()) -> Topology:
        return cls(_core.Topology.fat_tree(k, host_link.as_core(), fabric_link.as_core()))

    @classmethod
    def three_tier(
        cls,
        cores: int = 1,
        aggs: int = 2,
        edges: int = 5,
        hosts_per_edge: int = 10,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
        core_link: Link | None = None,
    ) -> Topology:
        core_link = core_link or fabric_link
        return cls(
            _core.Topology.three_tier(
                cores,
                aggs,
                edges,
                hosts_per_edge,
                host_link.as_core(),
                fabric_link.as_core(),
                core_link.as_core(),
            )
        )

    @classmethod
    def vl2(
        cls,
        d_a: int,
        d_i: int,
        hosts_per_tor: int = 20,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
    ) -> Topology:
        return cls(
            _core.Topology.vl2(d_a, d_i, hosts_per_tor, host_link.as_core(), fabric_link.as_core())
        )

    @classmethod
    def ring(
        cls,
        switches: int,
        hosts_per_switch: int = 1,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
    ) -> Topology:
        """`switches` switches in a cycle, each with `hosts_per_switch` hosts."""
        links = (host_link.as_core(), fabric_link.as_core())
        return cls(_core.Topology.ring(switches, hosts_per_switch, *links))

    @classmethod
    def mesh(
        cls,
        switches: int,
        hosts_per_switch: int = 1,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
    ) -> Topology:
        """`switches` switches, every pair linked, each with `hosts_per_switch` hosts."""
        links = (host_link.as_core(), fabric_link.as_core())
        return cls(_core.Topology.mesh(switches, hosts_per_switch, *links))

    @classmethod
    def custom(
        cls, hosts: list[str], switches: list[str], links: list[tuple[str, str, Link]]
    ) -> Topology:
        nodes = [(h, True) for h in hosts] + [(s, False) for s in switches]
        core_links = [(a, b, *link.as_core()) for a, b, link in links]
        return cls(_core.Topology.custom(nodes, core_links))

    @property
    def num_hosts(self) -> int:
        return self._core.num_hosts

    @property
    def num_nodes(self) -> int:
        return self._core.num_nodes

    def nodes(self) -> dict:
        """Columns `name`, `kind`, `role`, and `host_node` (host address → node index)."""
        return self._core.nodes()

    def links(self) -> dict:
        """Columns `a`, `b` (node indices), `rate_bps`, `delay_ps`."""
        return self._core.links()

    def to_networkx(self) -> nx.MultiGraph:
        """The graph with node attributes kind/role/address and link attributes
        rate_bps/delay_ps. A MultiGraph, so parallel links are kept."""
        nodes = self.nodes()
        links = self.links()
        address = {int(node): a for a, node in enumerate(nodes["host_node"])}
        g = nx.MultiGraph()
        for i, name in enumerate(nodes["name"]):
            g.add_node(name, kind=nodes["kind"][i], role=nodes["role"][i], address=address.get(i))
        for a, b, rate, delay in zip(
            links["a"], links["b"], links["rate_bps"], links["delay_ps"], strict=True
        ):
            g.add_edge(nodes["name"][a], nodes["name"][b], rate_bps=int(rate), delay_ps=int(delay))
        return g
