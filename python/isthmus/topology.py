"""Topologies: the datacenter shapes of the literature, or any graph you list.

Hosts are numbered 0, 1, ... in rack order (host h of a leaf-spine with H hosts per
leaf sits on leaf h // H); that number is the host's address in flows and records.
Each switch's ports are numbered in the order its links were added: host-facing
links first, then uplinks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import networkx as nx
import numpy as np

from isthmus import _core, arguments
from isthmus.arguments import U16, U32, shown, whole


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
                    f"Link {name} {shown(value)} has no unit; write it as a string with one, e.g. "
                    f"{example!r} (a bare number would be read in "
                    f"{'bit/s' if name == 'rate' else 'picoseconds'})"
                )
        self.as_core()

    def as_core(self) -> tuple[int, int]:
        return arguments.rate(self.rate, "Link rate"), arguments.duration(self.delay, "Link delay")


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
        counts = _counts(spines=spines, leaves=leaves, hosts_per_leaf=hosts_per_leaf)
        spines, leaves, hosts_per_leaf = counts.values()
        links_per_pair = whole(links_per_pair, "links_per_pair", 1, U16, "parallel links")
        host, fabric = _links(host_link=host_link, fabric_link=fabric_link)
        # With one spine per parallel link, the engine's builder has the same leaves,
        # links and ports per leaf: it refuses a network too large to build before the
        # edge list below is made.
        with _naming("leaf_spine", {**counts, "links_per_pair": links_per_pair}):
            single = _core.Topology.build(
                {
                    "kind": "leaf_spine",
                    "spines": spines * links_per_pair,
                    "leaves": leaves,
                    "hosts_per_leaf": hosts_per_leaf,
                    "host_link": host,
                    "fabric_link": fabric,
                }
            )
        if links_per_pair == 1:
            return cls(single)
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
        return cls(_built("fat_tree", _counts(k=k), host_link=host_link, fabric_link=fabric_link))

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
        counts = _counts(cores=cores, aggs=aggs, edges=edges, hosts_per_edge=hosts_per_edge)
        links = {"host_link": host_link, "fabric_link": fabric_link}
        return cls(_built("three_tier", counts, **links, core_link=core_link or fabric_link))

    @classmethod
    def vl2(
        cls,
        d_a: int,
        d_i: int,
        hosts_per_tor: int = 20,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
    ) -> Topology:
        counts = _counts(d_a=d_a, d_i=d_i, hosts_per_tor=hosts_per_tor)
        return cls(_built("vl2", counts, host_link=host_link, fabric_link=fabric_link))

    @classmethod
    def ring(
        cls,
        switches: int,
        hosts_per_switch: int = 1,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
    ) -> Topology:
        """`switches` switches in a cycle, each with `hosts_per_switch` hosts."""
        counts = _counts(switches=switches, hosts_per_switch=hosts_per_switch)
        return cls(_built("ring", counts, host_link=host_link, fabric_link=fabric_link))

    @classmethod
    def mesh(
        cls,
        switches: int,
        hosts_per_switch: int = 1,
        host_link: Link = Link(),
        fabric_link: Link = Link(),
    ) -> Topology:
        """`switches` switches, every pair linked, each with `hosts_per_switch` hosts."""
        counts = _counts(switches=switches, hosts_per_switch=hosts_per_switch)
        return cls(_built("mesh", counts, host_link=host_link, fabric_link=fabric_link))

    @classmethod
    def custom(
        cls, hosts: list[str], switches: list[str], links: list[tuple[str, str, Link]]
    ) -> Topology:
        for name, names in (("hosts", hosts), ("switches", switches)):
            if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"{name} must be a list of node names, got {shown(names)}")
        if not isinstance(links, list | tuple):
            raise ValueError(f"links must be a list of (a, b, Link) triples, got {shown(links)}")
        known = {*hosts, *switches}
        core_links = []
        for i, link in enumerate(links):
            if not (isinstance(link, tuple | list) and len(link) == 3):
                raise ValueError(f"links[{i}] must be an (a, b, Link) triple, got {shown(link)}")
            a, b, spec = link
            for end in (a, b):
                if not isinstance(end, str) or end not in known:
                    raise ValueError(
                        f"links[{i}] names node {shown(end)}, which is in neither hosts nor "
                        "switches"
                    )
            core_links.append((a, b, *_links(**{f"links[{i}]": spec})[0]))
        nodes = [(h, True) for h in hosts] + [(s, False) for s in switches]
        sizes = {"hosts": len(hosts), "switches": len(switches), "links": len(links)}
        with _naming("custom", sizes):
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

    def access_rates(self) -> np.ndarray:
        """Each host's access-link rate (bit/s), by host address."""
        links = self.links()
        rate_of_node: dict[int, int] = {}
        for a, b, rate in zip(links["a"], links["b"], links["rate_bps"], strict=True):
            rate_of_node.setdefault(int(a), int(rate))
            rate_of_node.setdefault(int(b), int(rate))
        return np.array([rate_of_node[int(n)] for n in self.nodes()["host_node"]], dtype=np.float64)

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


def _counts(**counts: object) -> dict[str, int]:
    """A builder's counts, each a whole number of at least 1 (the engine holds 32 bits;
    it refuses what it cannot build, saying why)."""
    return {name: whole(value, name, 1, U32) for name, value in counts.items()}


def _built(kind: str, counts: dict[str, int], **links: object) -> _core.Topology:
    """The engine's builder `kind` with `counts` and `links`, as one value (the engine's
    `TopologySpec`)."""
    spec = {"kind": kind, **counts, **dict(zip(links, _links(**links), strict=True))}
    with _naming(kind, counts):
        return _core.Topology.build(spec)


@contextmanager
def _naming(builder: str, counts: dict[str, int]) -> Iterator[None]:
    """The engine's refusal of a network (too many nodes, ports or routes) with the
    counts that asked for it, since it speaks of the network, not the arguments."""
    try:
        yield
    except ValueError as e:
        given = ", ".join(f"{name}={value}" for name, value in counts.items())
        raise ValueError(f"{e} (building {builder}({given}))") from None


def _links(**links: object) -> tuple[tuple[int, int], ...]:
    """Each `Link` argument in the engine's form (rate in bit/s, delay in ps)."""
    for name, link in links.items():
        if not isinstance(link, Link):
            raise ValueError(f"{name} must be a Link('10Gbps', '1us'), got {shown(link)}")
    return tuple(link.as_core() for link in links.values())
