"""The kernel's own counters of every emulated port, read over rtnetlink: each
device's bytes and packets (RTM_GETSTATS) and each of its qdiscs' backlog, drops and
bytes sent (RTM_GETQDISC), without a `tc` or `ip` process per reading, so that a port can
be read every few milliseconds while the traffic runs.

A netlink socket belongs to the network namespace it was made in: one socket per host
namespace, made by a short-lived thread that enters the namespace (a thread's namespace
is its own, so the caller's never changes), and one for the switches' ports, which live
in this process's namespace. The messages are parsed here with `struct`, as the
kernel's uapi headers lay them out (linux/rtnetlink.h, linux/gen_stats.h, linux/if_link.h)."""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from isthmus.emulate.system import EmulationError

NETLINK_ROUTE = 0
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
RTM_NEWLINK, RTM_GETLINK = 16, 18
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
RTM_NEWSTATS, RTM_GETSTATS = 92, 94
IFLA_STATS_LINK_64 = 1
IFLA_IFNAME = 3
TCA_STATS = 3
CLONE_NEWNET = 0x40000000
NLMSG_HEADER = struct.Struct("=IHHII")
"""length, type, flags, sequence, port id"""
IFINFO = struct.Struct("=BxHiII")
"""family, device type, index, flags, change mask"""
IF_STATS_MSG = struct.Struct("=BxxxII")
"""family, device index, filter mask (which attributes: here only the 64-bit counters)"""
TCMSG = struct.Struct("=BxxxiIII")
"""family, device index, handle, parent, info"""
ATTRIBUTE = struct.Struct("=HH")
LINK_STATS64 = struct.Struct("=4Q")
"""The first four counters of rtnl_link_stats64: rx and tx packets, rx and tx bytes."""
TC_STATS = struct.Struct("=QIIIIIII")
"""tc_stats: bytes, packets, drops, overlimits, bps, pps, qlen, backlog (bytes)."""
RECEIVE_BYTES = 1 << 16
"""More than one datagram of a dump holds (the kernel fills about 32 KiB a part)."""
ANSWER_TIMEOUT_S = 5.0
"""The kernel answers a dump at once: a longer wait is a fault, not a slow answer."""
ROOT = 0xFFFFFFFF
"""The parent of a device's root qdisc (TC_H_ROOT)."""


@dataclass(frozen=True)
class LinkCounters:
    tx_bytes: int
    tx_packets: int
    rx_bytes: int
    rx_packets: int


@dataclass(frozen=True)
class QdiscCounters:
    handle: int
    parent: int
    sent_bytes: int
    queue_packets: int
    queue_bytes: int
    drops: int


def handle(text: str) -> int:
    """The 32-bit handle `tc` writes as "10:" (major only) or "1:1"."""
    major, _, minor = text.partition(":")
    return int(major, 16) << 16 | int(minor or "0", 16)


class Namespace:
    """The counters of the devices of one network namespace."""

    def __init__(self, netns: str | None):
        """`netns`: a named namespace (`ip netns`), None for this process's own."""
        self.name = netns
        self._socket = _socket_in(netns)
        self._sequence = 0
        self._index = {name: index for index, name in self._names()}

    def close(self) -> None:
        self._socket.close()

    def index(self, device: str) -> int:
        try:
            return self._index[device]
        except KeyError:
            where = f"namespace {self.name}" if self.name else "the switches' namespace"
            raise EmulationError(f"{device} is not a device of {where}") from None

    def links(self) -> dict[int, LinkCounters]:
        """Each device's counters, by device index. Asked of RTM_GETSTATS with only the
        64-bit counters wanted: a link dump would bring every device's whole setting,
        ten times the bytes to parse."""
        wanted = 1 << (IFLA_STATS_LINK_64 - 1)
        out = {}
        for body in self._dump(RTM_GETSTATS, IF_STATS_MSG.pack(socket.AF_UNSPEC, 0, wanted)):
            _, index, _ = IF_STATS_MSG.unpack_from(body)
            for kind, value in _attributes(body, IF_STATS_MSG.size):
                if kind == IFLA_STATS_LINK_64:
                    out[index] = _link_counters(value)
        return out

    def qdiscs(self) -> dict[int, list[QdiscCounters]]:
        """Each device's qdiscs, by device index, from each qdisc's flat `tc_stats`
        (TCA_STATS, which the kernel still gives beside TCA_STATS2's nested form)."""
        out: dict[int, list[QdiscCounters]] = {}
        for body in self._dump(RTM_GETQDISC, TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
            _, index, qdisc, parent, _ = TCMSG.unpack_from(body)
            offset, end = TCMSG.size, len(body)
            while offset + ATTRIBUTE.size <= end:
                length, kind = ATTRIBUTE.unpack_from(body, offset)
                if length < ATTRIBUTE.size:
                    break
                if kind == TCA_STATS and length >= ATTRIBUTE.size + TC_STATS.size:
                    sent, _, drops, _, _, _, packets, backlog = TC_STATS.unpack_from(
                        body, offset + ATTRIBUTE.size
                    )
                    out.setdefault(index, []).append(
                        QdiscCounters(qdisc, parent, sent, packets, backlog, drops)
                    )
                    break
                offset += _aligned(length)
        return out

    def _names(self) -> Iterator[tuple[int, str]]:
        """(index, name) of each device."""
        for body in self._dump(RTM_GETLINK, IFINFO.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
            _, _, index, _, _ = IFINFO.unpack_from(body)
            for kind, value in _attributes(body, IFINFO.size):
                if kind == IFLA_IFNAME:
                    yield index, bytes(value).split(b"\0", 1)[0].decode()

    def _dump(self, request: int, header: bytes) -> Iterator[memoryview]:
        """The bodies of the kernel's answer to a dump request."""
        self._sequence += 1
        message = NLMSG_HEADER.pack(
            NLMSG_HEADER.size + len(header), request, NLM_F_REQUEST | NLM_F_DUMP, self._sequence, 0
        )
        try:
            self._socket.send(message + header)
        except OSError as e:
            raise EmulationError(f"netlink: asking the kernel for counters: {e}") from None
        while True:
            try:
                data = memoryview(self._socket.recv(RECEIVE_BYTES))
            except OSError as e:  # a timeout among them
                raise EmulationError(f"netlink: reading the kernel's counters: {e}") from None
            offset = 0
            while offset + NLMSG_HEADER.size <= len(data):
                length, kind, _, sequence, _ = NLMSG_HEADER.unpack_from(data, offset)
                if length < NLMSG_HEADER.size:
                    raise EmulationError(f"netlink: a message of {length} B")
                body = data[offset + NLMSG_HEADER.size : offset + length]
                offset += _aligned(length)
                if sequence != self._sequence:
                    continue
                if kind == NLMSG_DONE:
                    # A dump that failed part way ends here with its error.
                    error = struct.unpack_from("=i", body)[0] if len(body) >= 4 else 0
                    if error < 0:
                        raise EmulationError(f"netlink: the dump failed: {os.strerror(-error)}")
                    return
                if kind == NLMSG_ERROR:
                    (error,) = struct.unpack_from("=i", body)
                    raise EmulationError(f"netlink: the kernel answered {os.strerror(-error)}")
                if kind in (RTM_NEWLINK, RTM_NEWQDISC, RTM_NEWSTATS):
                    yield body


def _attributes(data: memoryview | bytes, offset: int) -> Iterator[tuple[int, memoryview]]:
    """(type, value) of each attribute from `offset` on; a nested attribute's flag bits
    are cleared from its type."""
    view = memoryview(data)
    while offset + ATTRIBUTE.size <= len(view):
        length, kind = ATTRIBUTE.unpack_from(view, offset)
        if length < ATTRIBUTE.size:
            return
        yield kind & 0x3FFF, view[offset + ATTRIBUTE.size : offset + length]
        offset += _aligned(length)


def _link_counters(value: memoryview) -> LinkCounters:
    rx_packets, tx_packets, rx_bytes, tx_bytes = LINK_STATS64.unpack_from(value)
    return LinkCounters(tx_bytes, tx_packets, rx_bytes, rx_packets)


def _aligned(length: int) -> int:
    return (length + 3) & ~3


def _socket_in(netns: str | None) -> socket.socket:
    """A NETLINK_ROUTE socket in namespace `netns` (None: this process's)."""
    if netns is None:
        return _route_socket()
    made: list[socket.socket | BaseException] = []

    def enter() -> None:
        # Only this thread enters the namespace; it ends once the socket is made.
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    error = ctypes.get_errno()
                    raise EmulationError(f"entering namespace {netns}: {os.strerror(error)}")
            finally:
                os.close(fd)
            made.append(_route_socket())
        except OSError as e:
            made.append(EmulationError(f"entering namespace {netns}: {e.strerror}"))
        except BaseException as e:  # handed to the caller, which raises it
            made.append(e)

    thread = threading.Thread(target=enter, name=f"netlink-{netns}")
    thread.start()
    thread.join()
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]


def _route_socket() -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
    sock.bind((0, 0))
    sock.settimeout(ANSWER_TIMEOUT_S)
    return sock
