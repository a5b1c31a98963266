"""The arena's schemes, each registered with the decision it makes and how a scenario
runs it: the [network] keys it sets, the transport its flows use, the control programs
it runs. Schemes that make the same decision form a group and are compared with each
other, everything else held at the group's baseline; a new scheme joins the arena by
`SCHEMES.register`, nothing else names it."""

from __future__ import annotations

from dataclasses import dataclass, field

from isthmus.registry import Registry

GROUPS = {
    "path selection": "which path a flow (or packet) takes; DCTCP flows (MPTCP's and "
    "OFPT's: MPTCP subflows, loss-based and coupled by LIA), 250-packet queues marking "
    "above 65 packets (the reference benchmark's) for every scheme",
    "queue management": "which packet waits, goes next or is dropped at a switch port; "
    "loss-based TCP (NewReno) over ECMP for every scheme",
    "congestion signalling": "when a switch tells DCTCP senders to slow down (ECN "
    "marking); ECMP and 250-packet queues for every scheme",
}
"""Each group: the decision its schemes make, and what is held fixed while they do."""

# The delay-based AQMs at datacenter time scale: RFC 8289's CoDel (5 ms target, 100 ms
# interval) and RFC 8033's PIE (15 ms target and update, 150 ms burst) are for Internet
# round trips of tens of ms; the arena's are tens of us, and a 250-packet queue at
# 10 Gb/s drains in 0.3 ms. Every time is scaled by 10^-3, and PIE's gains (per second
# of delay) by 10^3, so each update moves the probability as the RFC's would.
_DC_CODEL = {"kind": "codel", "target": "5us", "interval": "100us"}
_DC_PIE = {
    "kind": "pie",
    "target": "15us",
    "t_update": "15us",
    "max_burst": "150us",
    "alpha": 125.0,
    "beta": 1250.0,
}


@dataclass(frozen=True)
class Scheme:
    """One contender: its group, the [network] keys it sets over the group's baseline,
    its flows' transport, its control programs ([control] table, or None)."""

    name: str
    group: str
    network: dict = field(default_factory=dict)
    transport: str = "dctcp"
    control: dict | None = None
    source: str = ""
    tcp: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(
                f"scheme {self.name}: group must be one of {', '.join(GROUPS)}, not {self.group!r}"
            )


SCHEMES: Registry[Scheme] = Registry("arena scheme")


def register(scheme: Scheme) -> Scheme:
    return SCHEMES.register(scheme.name, scheme)


_BENCHMARK_QUEUES = {"switch_queue": "250pkts", "ecn_threshold": "65pkts"}
for _name, _routing in (("single_path", "single_path"), ("ecmp", "ecmp"), ("spray", "spray")):
    register(
        Scheme(
            _name,
            "path selection",
            {**_BENCHMARK_QUEUES, "routing": _routing},
            source="the engine's routing policies",
        )
    )
register(
    Scheme(
        "hedera",
        "path selection",
        {**_BENCHMARK_QUEUES, "routing": "ecmp"},
        control={
            "latency": "0s",
            # Polls every 0.5 ms (the paper's 5 s scaled by 10^-4) so that it acts within
            # the arena's flows' lifetimes.
            "apps": [{"name": "hedera", "period": "5s", "time_scale": 1e-4}],
        },
        source="Al-Fares et al., NSDI 2010 (isthmus.control.apps.hedera)",
    )
)

for _name, _control in (
    ("mptcp", None),
    (
        "ofpt",
        {"latency": "0s", "apps": [{"name": "ofpt", "period": "500us", "epsilon": 0.1}]},
    ),
):
    register(
        Scheme(
            _name,
            "path selection",
            {**_BENCHMARK_QUEUES, "routing": "ecmp"},
            transport="mptcp",
            control=_control,
            tcp={"mptcp_subflows": 4},
            source="MPTCP with 4 subflows (Raiciu et al., SIGCOMM 2011); OFPT's primal-dual "
            "multicommodity-flow split over them (isthmus.control.apps.ofpt)",
        )
    )

_TCP = {"routing": "ecmp"}
for _name, _network in (
    ("drop_tail", {"switch_queue": "250pkts"}),
    ("deep_buffer", {"switch_queue": "2500pkts"}),
    ("codel", {"switch_queue": "250pkts", "aqm": _DC_CODEL}),
    ("pie", {"switch_queue": "250pkts", "aqm": _DC_PIE}),
    ("fq", {"switch_queue": "250pkts", "scheduler": {"kind": "fq"}}),
    ("fq_codel", {"switch_queue": "250pkts", "scheduler": {"kind": "fq"}, "aqm": _DC_CODEL}),
):
    register(
        Scheme(
            _name,
            "queue management",
            {**_TCP, **_network},
            transport="tcp",
            source="the engine's queue disciplines (isthmus.queues)",
        )
    )

for _name, _network, _source in (
    ("no_marking", {}, "DCTCP with no marking: loss is its only signal"),
    ("ecn_k20", {"ecn_threshold": "20pkts"}, "a step marker at K = 20 packets"),
    ("ecn_k65", {"ecn_threshold": "65pkts"}, "the DCTCP paper's K = 65 packets at 10 Gb/s"),
    (
        "ecn_ramp",
        {"aqm": {"kind": "ramp", "kmin": "5KB", "kmax": "200KB", "pmax": 0.01}},
        "the DCQCN paper's ramp: Kmin 5 KB, Kmax 200 KB, Pmax 1 %",
    ),
):
    register(
        Scheme(
            _name,
            "congestion signalling",
            {"routing": "ecmp", "switch_queue": "250pkts", **_network},
            source=_source,
        )
    )
