"""The traffic of one emulated host, run inside its network namespace as its own process
(`python runner.py PLAN.json`): it listens where the host's flows arrive (TCP and UDP),
opens the host's own flows at their start times (kernel TCP connections; UDP datagrams
at a constant or Poisson rate), and reports on stdout, one JSON object a line, as things
happen: `arrival` (a flow of this host opens), `finished` (a TCP flow to this host
closed after its last byte: its bytes, first and last byte times), `sent` (this host's
flow is done: a TCP flow acknowledged and closed, a UDP flow's last datagram sent, with
the bytes and datagrams sent) and, every `PROGRESS_S`, `progress` (bytes received so
far, first and last arrival of each flow to this host still receiving). Times are
CLOCK_MONOTONIC nanoseconds, one clock for every namespace. Once it listens it says
`ready` and waits for the common start time on stdin (so that every host starts on one
clock); flows start at their offsets from it. It stops when the emulation says so
(SIGTERM, or the end of its stdin), never by itself; in between, each line on its
stdin is a command to its senders (`pace`, `hold`, `release`, `start`: when a flow with
no start time, an incast round's, starts).

Standard library only: it starts in every host, and quickly."""

from __future__ import annotations

import contextlib
import json
import random
import signal
import socket
import struct
import sys
import threading
import time

CHUNK = bytes(1 << 16)
HELD_CHUNK = 1 << 14
"""The most a sender writes at once: a hold stops new data within this much."""
SO_RCVBUFFORCE = 33  # Linux's; Python's socket module does not name it
POLL_S = 0.05
PROGRESS_S = 0.01
"""How often the bytes received so far are reported (what a controller reading flow
counters sees is at most this old)."""
_lock = threading.Lock()
_stop = threading.Event()
_received: dict[int, list] = {}
"""[bytes, first_ns, last_ns] received so far by each flow to this host still going."""
_pacing: dict[int, int] = {}
"""Each paced TCP flow of this host's pacing rate (bytes/s), as the controller set it."""
_sockets: dict[int, socket.socket] = {}
"""This host's TCP flows' sockets, once open."""
_gates: dict[int, threading.Event] = {}
"""Each TCP flow of this host's gate: cleared while the controller holds the flow."""
_starts: dict[int, threading.Event] = {}
"""Each flow that starts when told (an incast round's): set once it is."""
_start_at: dict[int, int] = {}
"""When each flow told to start starts (CLOCK_MONOTONIC ns)."""
SO_MAX_PACING_RATE = 47  # Linux's
UNPACED = 0xFFFFFFFF  # SO_MAX_PACING_RATE's "no limit"
TCP_INFO_COUNTS = {
    "retransmissions": (100, "=I"),  # tcpi_total_retrans: segments sent again
    "reordering_seen": (220, "=I"),  # tcpi_reord_seen: reorderings detected
    "out_of_order": (224, "=I"),  # tcpi_rcv_ooopack: packets received out of order
    "timeouts": (240, "=H"),  # tcpi_total_rto (Linux 6.7 on): retransmission timeouts
}
"""Offsets and formats in Linux's struct tcp_info (include/uapi/linux/tcp.h)."""
IPPROTO_MPTCP = 262  # Linux's
SOL_MPTCP = 284
MPTCP_INFO = 1  # struct mptcp_info begins with the extra subflows open (a byte)
_protocol = socket.IPPROTO_TCP
"""This host's stream sockets' protocol: TCP, or MPTCP when the plan says so."""


def tcp_counts(sock: socket.socket, *names: str) -> dict[str, int | None]:
    """The kernel's counts `names` of a TCP connection (TCP_INFO); None for one this
    kernel's tcp_info is too short to hold."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    counts: dict[str, int | None] = {}
    for name in names:
        offset, layout = TCP_INFO_COUNTS[name]
        fits = len(info) >= offset + struct.calcsize(layout)
        counts[name] = struct.unpack_from(layout, info, offset)[0] if fits else None
    return counts


def report(**event: object) -> None:
    line = json.dumps(event)
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _count(flow: int, size: int) -> None:
    now = time.monotonic_ns()
    seen = _received.get(flow)
    if seen is None:
        _received[flow] = [size, now, now]
    else:
        seen[0] += size
        seen[2] = now


def receive(conn: socket.socket, flow: int, size: int) -> None:
    try:
        while True:
            data = conn.recv(1 << 16)
            if not data:
                break
            _count(flow, len(data))
    except OSError as e:
        report(kind="error", flow=flow, error=f"receiving: {e}")
    received, first, _ = _received.pop(flow, [0, None, None])
    last = time.monotonic_ns()
    # An MPTCP connection's TCP_INFO is not one TCP's: its counts are not reported.
    counts = tcp_counts(conn, "out_of_order") if _protocol == socket.IPPROTO_TCP else {}
    report(
        kind="finished", flow=flow, time_ns=last, first_ns=first, bytes=received, size=size,
        **counts,
    )  # fmt: skip
    conn.close()


def _stream_server(port: int) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM, _protocol)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(1024)
    server.settimeout(POLL_S)
    return server


def _datagram_server(port: int) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Past rmem_max (SO_RCVBUFFORCE, root's): a burst waits here rather than being
    # dropped uncounted by a full socket.
    server.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 22)
    server.bind(("0.0.0.0", port))
    server.settimeout(POLL_S)
    return server


def listen(server: socket.socket, incoming: dict[tuple[str, int], tuple[int, int]]) -> None:
    while not _stop.is_set():
        try:
            conn, peer = server.accept()
        except TimeoutError:
            continue
        flow, size = incoming.get(peer, (-1, 0))
        threading.Thread(target=receive, args=(conn, flow, size), daemon=True).start()
    server.close()


def listen_datagrams(server: socket.socket, incoming: dict[tuple[str, int], int]) -> None:
    while not _stop.is_set():
        try:
            data, peer = server.recvfrom(1 << 16)
        except TimeoutError:
            continue
        flow = incoming.get(peer)
        if flow is None:
            report(kind="error", flow=-1, error=f"a datagram from {peer} of no flow")
            continue
        _count(flow, len(data))
    server.close()


def _wait_until(start_ns: int) -> bool:
    """Sleeps until `start_ns`; False if told to stop first."""
    delay = (start_ns - time.monotonic_ns()) / 1e9
    return not (delay > 0 and _stop.wait(delay))


def _wait_for_start(flow: int) -> bool:
    """Waits until the emulation says when flow `flow` starts (its round is due), then
    until then; False if told to stop first."""
    told = _starts.setdefault(flow, threading.Event())
    while not told.wait(POLL_S):
        if _stop.is_set():
            return False
    return _wait_until(_start_at[flow])


def send(
    flow: int,
    dst: str,
    src_port: int,
    dst_port: int,
    size: int,
    start_ns: int | None,
    cc: str,
    duration_ns: int | None = None,
    write_size: int | None = None,
) -> None:
    """Flow `flow`'s sending, from `start_ns` (None: when the emulation says, `start`):
    `size` bytes, or for a timed source writes of `write_size` until `duration_ns` has
    passed since it started (iperf's way: a write begun goes out whole)."""
    if not (_wait_until(start_ns) if start_ns is not None else _wait_for_start(flow)):
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, _protocol)
    error, sent, counts = None, 0, {}
    gate = _gates.setdefault(flow, _open_gate())
    report(kind="arrival", flow=flow, time_ns=time.monotonic_ns())
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        with _lock:
            _sockets[flow] = sock
            # Paced before it opened: the kernel paces it from its first segment.
            if flow in _pacing:
                _set_pacing(sock, _pacing[flow])
        sock.bind(("0.0.0.0", src_port))
        started = time.monotonic_ns()
        sock.connect((dst, dst_port))
        timed = duration_ns is not None and write_size is not None
        left = write_size if timed else size
        while left > 0:
            gate.wait()  # held: no new data until released
            wrote = sock.send(CHUNK[: min(left, len(CHUNK), HELD_CHUNK)])
            left -= wrote
            sent += wrote
            if left == 0 and timed and time.monotonic_ns() - started < duration_ns:
                left = write_size  # the next write: its time is not up
        if _protocol == IPPROTO_MPTCP:
            # The subflows open as the last data goes: the first and those added.
            counts["subflows"] = sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 1)[0] + 1
        sock.shutdown(socket.SHUT_WR)
        # The receiver closes once it has read everything: the flow is done.
        while sock.recv(1 << 12):
            pass
    except Exception as e:  # reported, never a sender thread dying in silence
        error = f"{type(e).__name__}: {e}"
    if _protocol == socket.IPPROTO_TCP:
        counts = tcp_counts(sock, "retransmissions", "timeouts", "reordering_seen")
    sock.close()
    report(kind="sent", flow=flow, time_ns=time.monotonic_ns(), error=error, bytes=sent, **counts)


def send_datagrams(
    flow: int,
    dst: str,
    src_port: int,
    dst_port: int,
    rate_bps: int,
    packet_bytes: int,
    payload: int,
    poisson: bool,
    size: int,
    start_ns: int,
    stop_ns: int | None,
) -> None:
    """Datagrams of `payload` bytes (`packet_bytes` on the wire as IP counts them) at
    `rate_bps`, evenly spaced or Poisson (drawn from the flow's own seed), until `size`
    bytes are sent (0: no limit) or `stop_ns`. A datagram the socket refuses (its
    buffer full) is dropped at the sender, as a NIC drops one."""
    if not _wait_until(start_ns):
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", src_port))
    sock.setblocking(False)
    draw = random.Random(flow)
    gap_ns = packet_bytes * 8 * 1e9 / rate_bps
    datagram = bytes(payload)
    sent = datagrams = refused = 0
    report(kind="arrival", flow=flow, time_ns=time.monotonic_ns())
    due = float(start_ns)
    while not _stop.is_set():
        if size and sent >= size:
            break
        if stop_ns is not None and due >= stop_ns:
            break
        now = time.monotonic_ns()
        # Sleep to the next datagram; a late wake-up sends what fell due at once.
        if due > now and _stop.wait((due - now) / 1e9):
            break
        this = datagram if not size else datagram[: min(payload, size - sent)]
        try:
            sock.sendto(this, (dst, dst_port))
            sent += len(this)
            datagrams += 1
        except (BlockingIOError, OSError):
            refused += 1
        due += draw.expovariate(1 / gap_ns) if poisson else gap_ns
    sock.close()
    report(
        kind="sent", flow=flow, time_ns=time.monotonic_ns(), error=None, bytes=sent,
        datagrams=datagrams, refused=refused,
    )  # fmt: skip


def _set_pacing(sock: socket.socket, rate: int) -> None:
    # An unsigned 32-bit value: a Python int would be read as a signed one.
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("=I", rate))


def _open_gate() -> threading.Event:
    gate = threading.Event()
    gate.set()
    return gate


def command(line: str) -> None:
    """Carries out one of the controller's commands to this host's senders: `pace`
    (a TCP flow's rate in bytes/s through the kernel's pacing, None: unpaced), `hold`
    and `release` (no new data from a flow, and new data again), and `start` (when a
    flow that waits to be told starts: an incast round's)."""
    order = json.loads(line)
    flow = order["flow"]
    if order["kind"] == "pace":
        rate = UNPACED if order["rate"] is None else max(1, order["rate"])
        with _lock:
            _pacing[flow] = rate
            sock = _sockets.get(flow)
            if sock is not None:
                with contextlib.suppress(OSError):  # closed meanwhile: the flow is done
                    _set_pacing(sock, rate)
    elif order["kind"] == "hold":
        _gates.setdefault(flow, _open_gate()).clear()
    elif order["kind"] == "release":
        _gates.setdefault(flow, _open_gate()).set()
    elif order["kind"] == "start":
        _start_at[flow] = order["at_ns"]
        _starts.setdefault(flow, threading.Event()).set()
    else:
        report(kind="error", flow=flow, error=f"unknown command {order!r}")


def progress() -> None:
    """Reports, as it changes, what each flow to this host still receiving has
    received."""
    last: dict = {}
    while not _stop.wait(PROGRESS_S):
        now = {flow: list(seen) for flow, seen in list(_received.items())}
        if now != last:
            report(kind="progress", time_ns=time.monotonic_ns(), flows=now)
            last = now


class Stop(Exception):
    """SIGTERM: the emulation is done with this host (or gave up before it started)."""


def _terminate(signum, frame) -> None:
    raise Stop


def main(plan_path: str) -> None:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        run(plan_path)
    except Stop:
        pass
    finally:
        _stop.set()
    report(kind="done", time_ns=time.monotonic_ns())


def run(plan_path: str) -> None:
    global _protocol
    with open(plan_path) as file:
        plan = json.load(file)
    if plan["mptcp"]:
        _protocol = IPPROTO_MPTCP
    incoming = {(src, sport): (flow, size) for flow, src, sport, dport, size in plan["incoming"]}
    datagrams_in = {(src, sport): flow for flow, src, sport, _ in plan["incoming_datagrams"]}
    # Every socket listens before this host says it is ready: a flow to it may start
    # the moment every host is.
    threads = [
        threading.Thread(target=listen, args=(server, incoming), daemon=True)
        for server in map(_stream_server, sorted({p for *_, p, _size in plan["incoming"]}))
    ]
    threads += [
        threading.Thread(target=listen_datagrams, args=(server, datagrams_in), daemon=True)
        for server in map(_datagram_server, sorted({p for *_, p in plan["incoming_datagrams"]}))
    ]
    threads.append(threading.Thread(target=progress, daemon=True))
    for thread in threads:
        thread.start()
    report(kind="ready", time_ns=time.monotonic_ns())
    # Commands may come before the start time (programs start at time 0, before the
    # traffic): each is carried out as it comes.
    for line in sys.stdin:
        if not line.startswith("{"):
            start = int(line)
            break
        command(line)
    else:  # the emulation gave up before the start
        return
    senders = [
        threading.Thread(
            target=send,
            args=(
                flow,
                dst,
                sport,
                dport,
                size,
                None if offset is None else start + offset,
                cc,
                duration,
                write_size,
            ),
            daemon=True,
        )  # fmt: skip
        for flow, dst, sport, dport, size, offset, cc, duration, write_size in plan["outgoing"]
    ]
    senders += [
        threading.Thread(
            target=send_datagrams,
            args=(*head, start + offset, None if stop is None else start + stop),
            daemon=True,
        )
        for *head, offset, stop in plan["outgoing_datagrams"]
    ]
    for sender in senders:
        sender.start()
    # Commands, one a line, until the emulation says stop (SIGTERM, or the end of
    # stdin): a runner that stopped by itself would look, to the emulation, like one
    # that failed.
    for line in sys.stdin:
        command(line)


if __name__ == "__main__":
    main(sys.argv[1])
