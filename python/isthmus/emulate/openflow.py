"""The controller's end of OpenFlow 1.3: one listening socket on loopback, one
connection per bridge, each known by its datapath id. Messages are encoded and decoded
by os-ken's OpenFlow 1.3 parser; the sockets are plain non-blocking ones polled by the
emulation's own loop (no event library, no threads).

The channel answers what needs no decision itself (hello, echo, the features
handshake) and hands everything else up: packet-ins, removed entries, statistics
replies and errors."""

from __future__ import annotations

import itertools
import selectors
import socket
import time
from dataclasses import dataclass, field

from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from isthmus.emulate.system import EmulationError

HEADER_BYTES = 8
RECEIVE_BYTES = 1 << 18


@dataclass
class Connection:
    """One bridge's OpenFlow connection, and what os-ken's message classes expect of a
    datapath (its protocol modules and transaction ids)."""

    sock: socket.socket
    ofproto = ofp
    ofproto_parser = parser
    node: int | None = None
    received: bytearray = field(default_factory=bytearray)
    outgoing: bytearray = field(default_factory=bytearray)
    xids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def set_xid(self, msg) -> None:
        msg.set_xid(next(self.xids) & 0xFFFFFFFF)

    def queue(self, msg) -> int:
        """Encodes `msg` after whatever waits to be sent; returns its transaction id."""
        self.set_xid(msg)
        msg.serialize()
        self.outgoing += msg.buf
        return msg.xid

    def messages(self) -> list:
        """Every whole message received so far, decoded."""
        out = []
        while len(self.received) >= HEADER_BYTES:
            version, kind, length, xid = ofproto_parser.header(bytes(self.received[:HEADER_BYTES]))
            if len(self.received) < length:
                break
            data = bytes(self.received[:length])
            del self.received[:length]
            out.append(ofproto_parser.msg(self, version, kind, length, xid, data))
        return out


class Channel:
    """Listens on 127.0.0.1 (a free port) for the bridges' connections."""

    def __init__(self):
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self._listener.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self._listener, selectors.EVENT_READ, self._accept)
        self.switches: dict[int, Connection] = {}
        self._connections: list[Connection] = []

    @property
    def address(self) -> str:
        host, port = self._listener.getsockname()
        return f"tcp:{host}:{port}"

    def _accept(self, _mask: int) -> list:
        sock, _ = self._listener.accept()
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = Connection(sock)
        self._connections.append(connection)
        self.selector.register(sock, selectors.EVENT_READ, lambda mask: self._read(connection))
        connection.queue(parser.OFPHello(connection))
        return self._flush(connection)

    def _read(self, connection: Connection) -> list[tuple[int, object]]:
        try:
            data = connection.sock.recv(RECEIVE_BYTES)
        except (BlockingIOError, InterruptedError):
            return []
        except ConnectionError as e:
            data, reason = b"", str(e)
        else:
            reason = "it closed the connection"
        if not data:
            return self._lost(connection, reason)
        connection.received += data
        handed_up = []
        for msg in connection.messages():
            if isinstance(msg, parser.OFPHello):
                connection.queue(parser.OFPFeaturesRequest(connection))
            elif isinstance(msg, parser.OFPEchoRequest):
                connection.queue(parser.OFPEchoReply(connection, data=msg.data))
            elif isinstance(msg, parser.OFPSwitchFeatures):
                connection.node = msg.datapath_id - 1
                self.switches[connection.node] = connection
                # Whole packets up to the controller: the switch keeps no buffers.
                connection.queue(parser.OFPSetConfig(connection, 0, ofp.OFPCML_NO_BUFFER))
            elif isinstance(msg, parser.OFPErrorMsg):
                raise EmulationError(
                    f"switch node {connection.node} refused an OpenFlow message: "
                    f"{describe_error(msg)}"
                )
            elif connection.node is not None:
                handed_up.append((connection.node, msg))
        return handed_up + self._flush(connection)

    def _lost(self, connection: Connection, reason: str) -> list:
        """A connection that closed: before its handshake, a switch that gave up
        waiting and connects again; after, a switch the run has lost."""
        self.selector.unregister(connection.sock)
        connection.sock.close()
        self._connections.remove(connection)
        if connection.node is not None:
            raise EmulationError(f"switch node {connection.node} left OpenFlow: {reason}")
        return []

    def _flush(self, connection: Connection) -> list:
        """Sends what waits, blocking until the socket takes it all (the switch reads
        its channel continuously: this takes microseconds)."""
        while connection.outgoing:
            try:
                sent = connection.sock.send(connection.outgoing)
            except BlockingIOError:
                selectors.select.select([], [connection.sock], [], 1.0)
                continue
            except ConnectionError as e:
                return self._lost(connection, str(e))
            del connection.outgoing[:sent]
        return []

    def send(self, node: int, msg) -> int:
        """Sends `msg` to switch `node`; returns its transaction id."""
        connection = self.switches[node]
        xid = connection.queue(msg)
        self._flush(connection)
        return xid

    def connection(self, node: int) -> Connection:
        return self.switches[node]

    def poll(self, timeout: float) -> list[tuple[int, object]]:
        """Messages from switches within `timeout` seconds (none if nothing came)."""
        received = []
        for key, mask in self.selector.select(max(timeout, 0.0)):
            received += key.data(mask)
        return received

    def wait_for(self, nodes: list[int], timeout: float) -> None:
        """Waits until every switch in `nodes` has connected and answered the handshake."""
        deadline = time.monotonic() + timeout
        while not set(nodes) <= set(self.switches):
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(nodes) - set(self.switches))
                raise EmulationError(
                    f"switch nodes {missing} did not connect to the controller within {timeout} s"
                )
            self.poll(min(left, 0.1))

    def close(self) -> None:
        for connection in self._connections:
            connection.sock.close()
        self.selector.close()
        self._listener.close()


def describe_error(msg) -> str:
    names = {
        getattr(ofp, name): name
        for name in dir(ofp)
        if name.startswith("OFPET_") and isinstance(getattr(ofp, name), int)
    }
    return f"{names.get(msg.type, msg.type)} code {msg.code}"
