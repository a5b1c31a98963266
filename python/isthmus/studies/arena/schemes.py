"""The arena's schemes, each registered with the decision it makes and how a scenario
runs it: the [network] keys it sets, the transport its flows use, the control programs
it runs. Schemes that make the same decision form a group and are compared with each
other, everything else held at the group's baseline; a new scheme joins the arena by
`SCHEMES.register`, nothing else names it."""

from __future__ import annotations

from dataclasses import dataclass, field

from isthmus.control.apps import is_agent
from isthmus.registry import Registry
from isthmus.studies.arena.learned import ACC, IBCN, IBCN_APP, Learning

GROUPS = {
    "path selection": "which path a flow (or packet) takes; DCTCP flows (MPTCP's and "
    "OFPT's: MPTCP subflows, loss-based and coupled by LIA), 250-packet queues marking "
    "above 65 packets (the reference benchmark's) for every scheme",
    "queue management": "which packet waits, goes next or is dropped at a switch port; "
    "loss-based TCP (NewReno) over ECMP for every scheme",
    "congestion signalling": "when a switch tells DCTCP senders to slow down (ECN "
    "marking); ECMP and 250-packet queues for every scheme",
    "RDMA congestion signalling": "when a switch marks packets for DCQCN senders (RDMA "
    "over lossless Ethernet); PFC, 12 MB shared buffers and ECMP for every scheme (ACC's "
    "testbed settings, isthmus reproduce acc). A DCQCN flow ends when its last byte "
    "arrives, with no handshake, so its short flows' slowdown (ideal: size at line rate "
    "plus a base round trip) falls below 1: compare within the group only",
    "combinations": "a path-selection scheme over another group's scheme, whole stacks "
    "against whole stacks: the path scheme's routing and control programs, the other's "
    "network, transport, control programs and training. Transports differ here: an RDMA "
    "stack's short flows finish without TCP's handshake, a real advantage of the stack",
    "BCN congestion notification": "when a switch tells a host's rate regulator to slow "
    "down or stop (Backward Congestion Notification); loss-based TCP (NewReno) behind the "
    "regulators, congestion points with IBCN's settings on every switch port, 250-packet "
    "queues and ECMP for every scheme (isthmus reproduce ibcn's setup)",
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
    its flows' transport, its control programs ([control] table, or None), and for a
    learned scheme how it learns before it is scored (`learning`)."""

    name: str
    group: str
    network: dict = field(default_factory=dict)
    transport: str = "dctcp"
    control: dict | None = None
    source: str = ""
    tcp: dict = field(default_factory=dict)
    learning: Learning | None = None
    varies: str | None = None
    """A sensitivity row: the scheme whose departure from its paper this one undoes
    (`source` says how); it is judged in that scheme's place, outside the verdicts."""

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(
                f"scheme {self.name}: group must be one of {', '.join(GROUPS)}, not {self.group!r}"
            )


SCHEMES: Registry[Scheme] = Registry("arena scheme")


def register(scheme: Scheme) -> Scheme:
    if scheme.varies is not None:
        original = SCHEMES.lookup(scheme.varies)
        if original.group != scheme.group or original.varies is not None:
            raise ValueError(
                f"scheme {scheme.name} varies {scheme.varies}: a sensitivity row varies a "
                f"scheme of its own group ({scheme.group}) that is no sensitivity row itself"
            )
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

# Diolkos at the arena's time scale: the paper samples every second and decides every
# two (flows of 10 s); here every 100 us and 200 us (10^-4), entries idle out after
# 500 us. The EWMA forecaster (the paper's heuristic): the paper's Dense net needs
# hundreds of rows a switch before it forecasts, more than the arena's runs hold.
register(
    Scheme(
        "diolkos",
        "path selection",
        {**_BENCHMARK_QUEUES, "routing": "ecmp"},
        control={
            "latency": "0s",
            "apps": [
                {
                    "name": "diolkos",
                    "model": "ewma",
                    "sample_period": "100us",
                    "smoothing": 1,
                    "train_after": 5,
                    "idle_timeout": "500us",
                }
            ],
        },
        source="Bel et al., CF 2021, with the paper's EWMA forecaster "
        "(isthmus.control.apps.diolkos)",
    )
)

# ACC's testbed at the arena's 10 Gb/s hosts: deep host queues served round robin (an
# RDMA NIC's queue pairs), 12 MB shared switch buffers, PFC on priority 0.
_RDMA = {
    "routing": "ecmp",
    "host_queue": "64MB",
    "host_scheduler": {"kind": "fq"},
    "switch_queue": "12MB",
    "shared_buffer": "12MB",
    "pfc": {"xoff": "1MB", "xon": "800KB", "lossless": [0], "free_fraction": 0.125},
}
for _name, _network, _source in (
    ("pfc_only", {}, "DCQCN senders with no marking: PFC's pauses are their only brake"),
    (
        "dcqcn_paper",
        {"aqm": {"kind": "ramp", "kmin": "5KB", "kmax": "200KB", "pmax": 0.01}},
        "DCQCN's own defaults (Zhu et al., SIGCOMM 2015): Kmin 5 KB, Kmax 200 KB, Pmax 1 %",
    ),
    (
        "dcqcn_production",
        {"aqm": {"kind": "ramp", "kmin": "40KB", "kmax": "160KB", "pmax": 0.2}},
        "the production profile ACC compares with (Kmin 100 KB, Kmax 400 KB at 25 Gb/s, "
        "Pmax 20 %), scaled to the hosts' 10 Gb/s",
    ),
):
    register(
        Scheme(
            _name,
            "RDMA congestion signalling",
            {**_RDMA, **_network},
            transport="dcqcn",
            source=_source,
        )
    )
register(
    Scheme(
        "acc",
        "RDMA congestion signalling",
        # ACC sets every port's marking from its start.
        _RDMA,
        transport="dcqcn",
        learning=ACC,
        source="Yan et al., SIGCOMM 2021: one shared Double-DQN tuning every port's marking "
        "every 1 ms, pre-trained on training traffic (isthmus.control.apps.acc)",
    )
)

# Sensitivity rows: the time-scale departures that could change a verdict, undone as far
# as the arena's runs allow, each judged in its original's place.
register(
    Scheme(
        "hedera_5ms",
        "path selection",
        {**_BENCHMARK_QUEUES, "routing": "ecmp"},
        control={
            "latency": "0s",
            "apps": [{"name": "hedera", "period": "5s", "time_scale": 1e-3}],
        },
        source="Hedera polling every 5 ms, the paper's 5 s scaled by 10^-3 rather than 10^-4",
        varies="hedera",
    )
)
for _name, _network, _original in (
    ("codel_rfc", {"aqm": {"kind": "codel"}}, "codel"),
    ("pie_rfc", {"aqm": {"kind": "pie"}}, "pie"),
    ("fq_codel_rfc", {"scheduler": {"kind": "fq"}, "aqm": {"kind": "codel"}}, "fq_codel"),
):
    register(
        Scheme(
            _name,
            "queue management",
            {**_TCP, "switch_queue": "250pkts", **_network},
            transport="tcp",
            source=f"{_original} at its RFC's own times and gains, unscaled",
            varies=_original,
        )
    )

# BCN at the arena's time scale: STOP pauses of 200-800 us (IBCN's 200-800 ms scaled by
# 10^-3, as isthmus reproduce ibcn scales them), restarting at 5 Gb/s, a host's share of
# its leaf's uplinks on the leaf-spine (the paper gives no rule).
_BCN = {
    "routing": "ecmp",
    "switch_queue": "250pkts",
    "bcn": {"pm": 0.01, "q_eq": 20.0, "q_sc": 90.0, "w": 2.0},
    "bcn_regulator": {"fair_share": "5Gbps", "min_pause": "200us", "max_pause": "800us"},
}
register(
    Scheme(
        "bcn",
        "BCN congestion notification",
        _BCN,
        transport="tcp",
        source="each congestion point's feedback from its own queue (Bergamasco, 2005; "
        "IBCN's baseline)",
    )
)
# IBCN's forecaster trained first on the switches' queues under plain BCN in training
# runs of web search (`learned.IBCN`), as its paper collects its training set before
# IBCN acts; its app added to each cell's run with that forecaster.
register(
    Scheme(
        "ibcn",
        "BCN congestion notification",
        _BCN,
        transport="tcp",
        source="Tran et al.: the controller forecasts every switch's queue (a 4-layer "
        "LSTM, the paper's, trained on web search's queues) and drives its congestion "
        "point from the forecast (isthmus.control.apps.ibcn)",
        learning=IBCN,
    )
)
# Sensitivity: IBCN fitted on its own run's first 75 polls (7.5 ms, plain BCN meanwhile),
# every switch one variable of one model, as this arena ran it before it trained IBCN
# on other traffic.
register(
    Scheme(
        "ibcn_in_run",
        "BCN congestion notification",
        _BCN,
        transport="tcp",
        control={"latency": "0s", "apps": [{**IBCN_APP, "training_polls": 75}]},
        source="IBCN fitted on its own run's first 75 polls (held out in time, not in "
        "traffic), every switch a variable of one model",
        varies="ibcn",
    )
)


def combine(path: str, other: str) -> Scheme:
    """Path-selection scheme `path` over `other` (a scheme of another group): `other`'s
    network with `path`'s routing, `other`'s transport, TCP settings and training, both
    schemes' control programs. Raises naming the clash where they cannot be combined:
    two transports, two agents on every switch, or control planes of different
    latency."""
    route, over = SCHEMES.lookup(path), SCHEMES.lookup(other)
    name = f"{path}+{other}"
    if route.group != "path selection" or over.group in ("path selection", "combinations"):
        raise ValueError(
            f"combination {name}: combine a path-selection scheme with a scheme of another "
            f"group, not {route.group} with {over.group}"
        )
    if route.transport != "dctcp" and route.transport != over.transport:
        raise ValueError(
            f"combination {name}: {path}'s flows are {route.transport}, {other}'s "
            f"{over.transport}; a flow has one transport"
        )
    agents = [
        f"{scheme.name}'s {app['name']}"
        for scheme in (route, over)
        for app in (scheme.control or {"apps": []})["apps"]
        if is_agent(app["name"])
    ]
    if over.learning is not None and over.learning.on_every_switch:
        agents.append(f"{other}'s learners")
    if len(agents) > 1:
        raise ValueError(
            f"combination {name}: a switch runs one agent, and {' and '.join(agents)} "
            "would both run on every switch"
        )
    controls = [c for c in (route.control, over.control) if c is not None]
    if len({c.get("latency") for c in controls}) > 1:
        raise ValueError(f"combination {name}: the two control planes' latencies differ")
    control = (
        {**controls[0], "apps": [app for c in controls for app in c["apps"]]} if controls else None
    )
    return Scheme(
        name,
        "combinations",
        {**over.network, "routing": route.network.get("routing", "ecmp")},
        transport=over.transport,
        control=control,
        source=f"{path}'s paths over {other}",
        tcp={**route.tcp, **over.tcp},
        learning=over.learning,
    )


# The reference benchmark's stack first; the others pair a group's schemes with a path
# scheme that could help them (Hedera's placement under ACC's learners, ...). Two more
# ran and were left out of the default for their cost: Diolkos's agents over DCQCN took
# a fifth of the full arena's CPU (its agents sample every 100 us through data mining's
# second-long runs on the k = 8 tree), and packet spraying over DCQCN, whose go-back-N
# receivers meet reordered packets, had mean slowdowns up to 21 where ECMP's stay under
# 3, and one Hadoop run on the k = 8 tree that had not ended after 10 minutes.
for _path, _other in (
    ("ecmp", "ecn_k65"),
    ("spray", "ecn_k20"),
    ("hedera", "fq_codel"),
    ("spray", "fq"),
    ("hedera", "acc"),
    ("hedera", "bcn"),
):
    register(combine(_path, _other))
