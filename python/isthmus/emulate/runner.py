"""The traffic of one emulated host, run inside its network namespace as its own process
(`python runner.py PLAN.json`): it listens where the host's flows arrive, opens the
host's own flows at their start times as kernel TCP connections, and reports on stdout,
one JSON object a line, as things happen: `arrival` (a flow of this host opens),
`finished` (the last byte of a flow to this host arrived: its bytes, first and last byte
times) and `sent` (this host's flow is acknowledged and closed). Times are
CLOCK_MONOTONIC nanoseconds, one clock for every namespace. Once it listens it says
`ready` and waits for the common start time on stdin (so that every host starts on one
clock); flows start at their offsets from it. It stops at the plan's end, or on SIGTERM
(the emulation's, once every flow has finished).

Standard library only: it starts in every host, and quickly."""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
import time

CHUNK = bytes(1 << 16)
ACCEPT_POLL_S = 0.05
PROGRESS_S = 0.01
"""How often the bytes received so far are reported (what a controller reading flow
counters sees is at most this old)."""
_lock = threading.Lock()
_stop = threading.Event()
_received: dict[int, int] = {}
"""Bytes received so far by each flow to this host that has not finished."""


def report(**event: object) -> None:
    line = json.dumps(event)
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def receive(conn: socket.socket, flow: int, size: int) -> None:
    received, first = 0, None
    try:
        while True:
            data = conn.recv(1 << 16)
            if not data:
                break
            if first is None:
                first = time.monotonic_ns()
            received += len(data)
            _received[flow] = received
    except OSError as e:
        report(kind="error", flow=flow, error=f"receiving: {e}")
    last = time.monotonic_ns()
    _received.pop(flow, None)
    report(kind="finished", flow=flow, time_ns=last, first_ns=first, bytes=received, size=size)
    conn.close()


def listen(port: int, incoming: dict[tuple[str, int], tuple[int, int]]) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(1024)
    server.settimeout(ACCEPT_POLL_S)
    while not _stop.is_set():
        try:
            conn, peer = server.accept()
        except TimeoutError:
            continue
        flow, size = incoming.get(peer, (-1, 0))
        threading.Thread(target=receive, args=(conn, flow, size), daemon=True).start()
    server.close()


def send(
    flow: int, dst: str, src_port: int, dst_port: int, size: int, start_ns: int, cc: str
) -> None:
    delay = (start_ns - time.monotonic_ns()) / 1e9
    if delay > 0 and _stop.wait(delay):
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    error = None
    report(kind="arrival", flow=flow, time_ns=time.monotonic_ns())
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        sock.bind(("0.0.0.0", src_port))
        sock.connect((dst, dst_port))
        left = size
        while left > 0:
            left -= sock.send(CHUNK[: min(left, len(CHUNK))])
        sock.shutdown(socket.SHUT_WR)
        # The receiver closes once it has read everything: the flow is done.
        while sock.recv(1 << 12):
            pass
    except OSError as e:
        error = str(e)
    sock.close()
    report(kind="sent", flow=flow, time_ns=time.monotonic_ns(), error=error)


def progress() -> None:
    """Reports the bytes each unfinished flow to this host has received, as they
    change."""
    last: dict[int, int] = {}
    while not _stop.wait(PROGRESS_S):
        now = dict(_received)
        if now != last:
            report(kind="progress", time_ns=time.monotonic_ns(), bytes=now)
            last = now


def main(plan_path: str) -> None:
    with open(plan_path) as file:
        plan = json.load(file)
    signal.signal(signal.SIGTERM, lambda *_: _stop.set())
    incoming = {(src, sport): (flow, size) for flow, src, sport, dport, size in plan["incoming"]}
    listeners = [
        threading.Thread(target=listen, args=(port, incoming), daemon=True)
        for port in sorted({dport for *_, dport, _size in plan["incoming"]})
    ]
    for listener in listeners:
        listener.start()
    threading.Thread(target=progress, daemon=True).start()
    report(kind="ready", time_ns=time.monotonic_ns())
    start = int(sys.stdin.readline())
    senders = [
        threading.Thread(
            target=send, args=(flow, dst, sport, dport, size, start + offset, cc), daemon=True
        )
        for flow, dst, sport, dport, size, offset, cc in plan["outgoing"]
    ]
    for sender in senders:
        sender.start()
    end = start + plan["duration_ns"]
    for sender in senders:
        sender.join(max(0.0, (end - time.monotonic_ns()) / 1e9))
    # Stay while flows to this host may still arrive (their senders finish them).
    while not _stop.is_set() and time.monotonic_ns() < end:
        _stop.wait(ACCEPT_POLL_S)
    _stop.set()
    report(kind="done", time_ns=time.monotonic_ns())


if __name__ == "__main__":
    main(sys.argv[1])
