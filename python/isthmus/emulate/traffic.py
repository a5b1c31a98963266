"""The scenario's flows as real traffic: one runner (`runner.py`) per host in its
namespace, each given the flows it sends and expects, all started on one clock; their
reports become the control plane's flow events and, at the end, the flow table."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isthmus.control.events import Event, FlowArrival, FlowFinished
from isthmus.emulate.footprint import Footprint
from isthmus.emulate.network import EmulatedNetwork, host_ip
from isthmus.emulate.rounds import NOT_YET, Rounds
from isthmus.emulate.system import EmulationError, command

RUNNER = Path(__file__).with_name("runner.py")
KERNEL_CONGESTION_CONTROL = {"tcp": "reno", "cubic": "cubic", "dctcp": "dctcp"}
"""The kernel's algorithm closest to each transport: the engine's `tcp` is NewReno."""
RUNNER_START_TIMEOUT_S = 30.0
RUNNER_STOP_TIMEOUT_S = 10.0
IP_UDP_HEADER_BYTES = 28
TCP_COUNTS = ("retransmissions", "timeouts", "out_of_order", "reordering_seen")
"""What the kernel counted of each TCP flow: segments sent again and retransmission
timeouts at its sender, reorderings its sender detected, packets its receiver got out of
order (the simulator's columns of the same names, but `reordering_seen`)."""
REPORTED_COUNTS = (*TCP_COUNTS, "subflows")
"""What the runners report of a TCP flow: its TCP_INFO counts, or for an MPTCP
connection (whose TCP_INFO is not one TCP's) the subflows it had open at its end."""
SENDERS_SETTLE_S = 2.0
MPTCP_PORT_BASE = 40_000
"""The ports a host announces for MPTCP's extra subflows: above every flow's own."""
DATAGRAM_GRACE_NS = 100_000_000
"""How long after a UDP flow's last datagram left it counts as done: far longer than
any queue of the emulated network holds a datagram."""


@dataclass
class FlowRecord:
    """What the runners reported of one flow (times: CLOCK_MONOTONIC ns; None: not
    yet)."""

    arrival_ns: int | None = None
    first_ns: int | None = None
    last_ns: int | None = None
    finished_ns: int | None = None
    bytes_received: int = 0
    sent_ns: int | None = None
    bytes_sent: int = 0
    datagrams_sent: int = 0
    datagrams_refused: int = 0
    """Datagrams the sender's socket refused (its buffer full): dropped at the sender."""
    counts: dict[str, int | None] = field(default_factory=dict)
    """A TCP flow's counts from its sockets' TCP_INFO once it closed (`TCP_COUNTS`)."""
    error: str | None = None
    read_to_end: bool = False
    """Its receiver read to the end of the stream with no error reported by then: a
    timed source's finish (decided then, whatever its sender reports after)."""


@dataclass(frozen=True)
class Datagrams:
    """A UDP flow's sending: `rate_bps` (as emulated), datagrams of `packet_bytes` as IP
    counts them, evenly spaced or Poisson, until `size` bytes (0: no limit) or `stop_ps`
    (None: no stop) from `start_ps`."""

    rate_bps: int
    packet_bytes: int
    poisson: bool
    size: int
    start_ps: int
    stop_ps: int | None

    @property
    def payload(self) -> int:
        return self.packet_bytes - IP_UDP_HEADER_BYTES


@dataclass(frozen=True)
class TimedSource:
    """An iperf-like TCP flow: writes of `write_size` bytes, as fast as the socket takes
    them, for `duration_ps` from its start; its size is what it wrote."""

    duration_ps: int
    write_size: int


@dataclass
class Traffic:
    """The flows (the simulation's flow table: src, dst, src_port, dst_port,
    size_bytes, start_ps) and the kernel congestion control they run."""

    flows: dict[str, np.ndarray]
    congestion_control: str | None
    datagrams: dict[int, Datagrams] = field(default_factory=dict)
    """The UDP flows' sending, by flow id (every other flow is TCP)."""
    mptcp_subflows: int | None = None
    """Subflows of each TCP flow when they are MPTCP connections (None: plain TCP)."""
    rounds: Rounds = field(default_factory=lambda: Rounds([]))
    """Incast rounds: the flows that start when their round is due (`rounds`)."""
    timed: dict[int, TimedSource] = field(default_factory=dict)
    """The timed sources, by flow id (their size in `flows` is the engine's unknown)."""
    rounds_over: bool = False
    """Set once the run has ended: a round that falls due after it does not start."""
    records: list[FlowRecord] = field(default_factory=list)
    start_ns: int = 0
    _runners: dict[int, subprocess.Popen] = field(default_factory=dict)
    _partial: dict[int, bytes] = field(default_factory=dict)
    _ready: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.records = [FlowRecord() for _ in range(len(self.flows["src"]))]

    @property
    def unfinished(self) -> int:
        """Flows not yet done: a TCP flow until its last byte arrived, a UDP flow until
        `DATAGRAM_GRACE_NS` after its last datagram left (what is still on its way
        then is lost)."""
        now = time.monotonic_ns()
        return sum(
            (r.sent_ns is None or now - r.sent_ns < DATAGRAM_GRACE_NS)
            if flow in self.datagrams
            else self._finish(flow) is None
            for flow, r in enumerate(self.records)
        )

    @property
    def errors(self) -> list[str]:
        """What went wrong for flows whose sender or receiver reported an error."""
        return [f"flow {i}: {r.error}" for i, r in enumerate(self.records) if r.error]

    @property
    def refused(self) -> int:
        """Datagrams the senders' sockets refused, in all."""
        return sum(r.datagrams_refused for r in self.records)

    def plans(self) -> dict[int, dict]:
        """Each host's runner plan."""
        f = self.flows
        hosts = sorted(set(f["src"].tolist()) | set(f["dst"].tolist()))
        lists = ("incoming", "outgoing", "incoming_datagrams", "outgoing_datagrams")
        mptcp = self.mptcp_subflows is not None
        plans = {h: {"mptcp": mptcp} | {key: [] for key in lists} for h in hosts}
        for flow in range(len(f["src"])):
            src, dst = int(f["src"][flow]), int(f["dst"][flow])
            sport, dport = int(f["src_port"][flow]), int(f["dst_port"][flow])
            size, start_ps = int(f["size_bytes"][flow]), int(f["start_ps"][flow])
            udp = self.datagrams.get(flow)
            if udp is not None:
                plans[dst]["incoming_datagrams"].append([flow, host_ip(src), sport, dport])
                stop = None if udp.stop_ps is None else udp.stop_ps // 1000
                plans[src]["outgoing_datagrams"].append(
                    [flow, host_ip(dst), sport, dport, udp.rate_bps, udp.packet_bytes,
                     udp.payload, udp.poisson, udp.size, udp.start_ps // 1000, stop]
                )  # fmt: skip
                continue
            plans[dst]["incoming"].append([flow, host_ip(src), sport, dport, size])
            offset = None if start_ps == NOT_YET else start_ps // 1000
            timed = self.timed.get(flow)
            plans[src]["outgoing"].append(
                [flow, host_ip(dst), sport, dport, size, offset, self.congestion_control,
                 None if timed is None else timed.duration_ps // 1000,
                 None if timed is None else timed.write_size]
            )  # fmt: skip
        return plans

    def launch(self, network: EmulatedNetwork, footprint: Footprint) -> None:
        """Starts every host's runner and waits until each listens."""
        plans = self.plans()
        if self.mptcp_subflows is not None:
            self._open_mptcp(network, plans)
        for host, plan in plans.items():
            path = footprint.directory / f"plan-{host}.json"
            path.write_text(json.dumps(plan))
            runner = subprocess.Popen(
                ["ip", "netns", "exec", network.host_namespace(host), sys.executable, "-u",
                 str(RUNNER), str(path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
            os.set_blocking(runner.stdout.fileno(), False)
            self._runners[host] = runner
            footprint.add_process(runner.pid)
        deadline = time.monotonic() + RUNNER_START_TIMEOUT_S
        while len(self._ready) < len(self._runners):
            waiting = {fd: host for fd, host in self.pipes().items() if host not in self._ready}
            readable, _, _ = select.select(
                list(waiting), [], [], max(0.0, deadline - time.monotonic())
            )
            if not readable:
                late = sorted(waiting.values())
                raise EmulationError(
                    f"the traffic runners of hosts {late} did not start within "
                    f"{RUNNER_START_TIMEOUT_S} s"
                )
            for fd in readable:
                host = waiting[fd]
                self.read(host, lambda ns: ns)
                runner = self._runners[host]
                if host not in self._ready and runner.poll() is not None:
                    why = runner.stderr.read().decode(errors="replace").strip().splitlines()
                    raise EmulationError(
                        f"host {host}'s traffic runner stopped: {' '.join(why[-2:])}"
                    )

    def _open_mptcp(self, network: EmulatedNetwork, plans: dict[int, dict]) -> None:
        """Readies every host's kernel MPTCP for `mptcp_subflows` subflows a connection:
        each host accepts that many more, and each host that receives flows announces
        one more port of its address for each (ADD_ADDR with a port), to which the
        sender's path manager opens a subflow. Each subflow has its own ports, so the
        switches' ECMP hashes it on a path of its own."""
        extra = str(self.mptcp_subflows - 1)
        for host, plan in plans.items():
            namespace = network.host_namespace(host)
            what = f"readying host {host}'s MPTCP"
            command("sysctl", "-q", "-w", "net.mptcp.enabled=1", what=what, namespace=namespace)
            limits = ("ip", "mptcp", "limits", "set", "subflow", extra, "add_addr_accepted", extra)
            command(*limits, what=what, namespace=namespace)
            if plan["incoming"]:
                for port in range(MPTCP_PORT_BASE, MPTCP_PORT_BASE + int(extra)):
                    command(
                        "ip", "mptcp", "endpoint", "add", host_ip(host), "port", str(port),
                        "signal", what=what, namespace=namespace,
                    )  # fmt: skip

    def start(self, start_ns: int) -> None:
        """Tells every runner the common start time (CLOCK_MONOTONIC ns)."""
        self.start_ns = start_ns
        for runner in self._runners.values():
            runner.stdin.write(f"{start_ns}\n".encode())
            runner.stdin.flush()

    def order(self, flow: int, **order: object) -> None:
        """Hands a command for TCP flow `flow` to its source host's runner."""
        if flow in self.datagrams:
            raise ValueError(f"flow {flow} is a UDP stream; pace, hold and release act on TCP")
        host = int(self.flows["src"][flow])
        runner = self._runners[host]
        runner.stdin.write((json.dumps({"flow": flow} | order) + "\n").encode())
        runner.stdin.flush()

    def await_senders(self) -> None:
        """Reads the runners' reports until the sender of every TCP flow whose last byte
        arrived has reported too (with its TCP_INFO counts), for at most
        `SENDERS_SETTLE_S`: a sender reports once its receiver has closed, just after
        the flow counts as finished and the run may have ended."""
        deadline = time.monotonic() + SENDERS_SETTLE_S
        while any(
            r.finished_ns is not None and r.sent_ns is None
            for flow, r in enumerate(self.records)
            if flow not in self.datagrams
        ):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            pipes = self.pipes()
            readable, _, _ = select.select(list(pipes), [], [], left)
            for fd in readable:
                self.read(pipes[fd], lambda ns: ns)

    def pipes(self) -> dict[int, int]:
        """The runners' report pipes: file descriptor -> host."""
        return {r.stdout.fileno(): host for host, r in self._runners.items()}

    def read(self, host: int, to_ps: Callable[[int], int]) -> list[Event]:
        """What host `host`'s runner reported since the last read, as control events;
        `to_ps` turns a CLOCK_MONOTONIC ns time into the plane's ps."""
        runner = self._runners[host]
        received = runner.stdout.read()
        if received == b"":  # the end of its reports: it stopped, and was not told to
            runner.wait()
            why = runner.stderr.read().decode(errors="replace").strip().splitlines()
            raise EmulationError(
                f"host {host}'s traffic runner stopped during the run (exit status "
                f"{runner.returncode}): {' '.join(why[-3:]) or 'it said nothing'}"
            )
        data = self._partial.pop(host, b"") + (received or b"")
        *lines, rest = data.split(b"\n")
        if rest:
            self._partial[host] = rest
        events = []
        for line in lines:
            report = json.loads(line)
            if report["kind"] == "ready":
                self._ready.add(host)
            elif report["kind"] != "done":
                events += self._record(report, to_ps)
        return events

    def _record(self, report: dict, to_ps: Callable[[int], int]) -> list[Event]:
        kind = report["kind"]
        if kind == "progress":
            for flow, (received, first, last) in report["flows"].items():
                record = self.records[int(flow)]
                if record.finished_ns is None:
                    record.bytes_received, record.first_ns, record.last_ns = received, first, last
            return []
        flow = report["flow"]
        if flow < 0:
            raise EmulationError(
                f"a host received a connection no flow of the scenario made: {report}"
            )
        record = self.records[flow]
        if kind == "error":
            record.error = report["error"]
            return []
        if kind == "arrival":
            record.arrival_ns = report["time_ns"]
            f = self.flows
            return [
                FlowArrival(
                    to_ps(record.arrival_ns),
                    flow,
                    int(f["src"][flow]),
                    int(f["dst"][flow]),
                    int(f["size_bytes"][flow]),
                )
            ]
        if kind == "sent":
            record.sent_ns = report["time_ns"]
            record.error = record.error or report["error"]
            record.bytes_sent = report["bytes"]
            record.datagrams_sent = report.get("datagrams", 0)
            record.datagrams_refused = report.get("refused", 0)
            record.counts |= {k: report[k] for k in REPORTED_COUNTS if k in report}
            if flow in self.datagrams:
                return [FlowFinished(to_ps(record.sent_ns), flow)]
            return []
        if kind == "finished":
            record.finished_ns = report["time_ns"]
            record.first_ns = report["first_ns"]
            record.last_ns = record.finished_ns
            record.bytes_received = report["bytes"]
            record.counts |= {k: report[k] for k in REPORTED_COUNTS if k in report}
            record.read_to_end = record.error is None
            if self._finish(flow) is None:
                # The connection closed short of the flow's size, or with an error (a
                # timed source's end is its sender's close): it did not finish.
                return []
            following, at_ns = self.rounds.finished(flow, record.finished_ns)
            for next_flow in following if not self.rounds_over else []:
                self.order(next_flow, kind="start", at_ns=at_ns)
            return [FlowFinished(to_ps(record.finished_ns), flow)]
        raise EmulationError(
            f"a traffic runner reported {report}, which this version does not know"
        )

    def _finish(self, flow: int) -> int | None:
        """When a flow finished: a TCP flow's last byte, once all arrived; a UDP flow's
        last datagram to arrive, once the sender is done (as the simulator has it)."""
        record = self.records[flow]
        if flow in self.datagrams:
            return record.last_ns if record.sent_ns is not None else None
        if flow in self.timed:
            # Its receiver read to the end of what the sender wrote, without an error.
            return record.finished_ns if record.read_to_end else None
        done = record.bytes_received >= int(self.flows["size_bytes"][flow])
        return record.finished_ns if done else None

    def stop(self) -> None:
        """Tells every runner to stop (SIGTERM, and the end of its stdin) and waits for
        them all, `RUNNER_STOP_TIMEOUT_S` in all, killing what is left."""
        for runner in self._runners.values():
            if runner.poll() is None:
                runner.terminate()
            with contextlib.suppress(OSError):
                runner.stdin.close()
        deadline = time.monotonic() + RUNNER_STOP_TIMEOUT_S
        for runner in self._runners.values():
            try:
                runner.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                runner.kill()
                runner.wait()
            for pipe in (runner.stdout, runner.stderr):
                pipe.close()
        self._runners.clear()

    def table(self, to_ps: Callable[[int], int]) -> dict[str, np.ndarray]:
        """The flow table in the simulator's columns where the emulation measures them
        (times in ps from the start, -1 where the event did not happen)."""

        def times(values):
            return np.array([-1 if v is None else to_ps(v) for v in values], dtype=np.int64)

        f = self.flows
        r = self.records
        return {
            "src": f["src"],
            "src_port": f["src_port"],
            "dst_port": f["dst_port"],
            "subflows": f["subflows"],
            "datagram": f["datagram"],
            "dst": f["dst"],
            "size_bytes": self._sizes(),
            "start_ps": times([x.arrival_ns for x in r]),
            "first_delivery_ps": times([x.first_ns for x in r]),
            "last_delivery_ps": times([x.last_ns for x in r]),
            "finish_ps": times([self._finish(flow) for flow in range(len(r))]),
            "bytes_sent": np.array([x.bytes_sent for x in r], dtype=np.uint64),
            "bytes_received": np.array([x.bytes_received for x in r], dtype=np.uint64),
        } | self._counts()

    def _sizes(self) -> np.ndarray:
        """Each flow's size: a timed source's is what arrived once it finished (the
        engine's unknown until then), as the simulator has it."""
        sizes = np.array(self.flows["size_bytes"], dtype=np.uint64)
        for flow in self.timed:
            if self._finish(flow) is not None:
                sizes[flow] = self.records[flow].bytes_received
        return sizes

    def _counts(self) -> dict[str, np.ndarray]:
        """Each of `REPORTED_COUNTS` the kernel gave for every TCP flow (a UDP flow
        counts 0; with MPTCP, `subflows` is what each connection had open, in place of
        the number asked for); one it did not give for some flow (a flow still open at
        the end, a kernel too old for it, an MPTCP connection's TCP counts) is left out
        of the table rather than guessed."""
        columns = {}
        for name in REPORTED_COUNTS if self.mptcp_subflows else TCP_COUNTS:
            values = [
                0 if flow in self.datagrams else record.counts.get(name)
                for flow, record in enumerate(self.records)
            ]
            if None not in values:
                columns[name] = np.array(values, dtype=np.uint64)
        return columns
