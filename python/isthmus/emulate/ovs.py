"""A private Open vSwitch: its own ovsdb-server and ovs-vswitchd, each with its run
directory, database, sockets and log in the run's directory, never the system's.
Bridges use the userspace datapath (`datapath_type=netdev`): no kernel module needed."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import subprocess
import time
from pathlib import Path

from isthmus.emulate.footprint import Footprint, stop_process
from isthmus.emulate.system import EmulationError, command

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
SO_SNDBUFFORCE = 32
PIDFD_GETFD = 438
"""The syscall's number on x86-64 and every architecture of the generic table."""
START_TIMEOUT_S = 10.0


class OpenVSwitch:
    def __init__(self, footprint: Footprint):
        self.footprint = footprint
        self.dir = footprint.directory / "ovs"
        self.db_socket = self.dir / "db.sock"
        self._daemons: list[subprocess.Popen] = []

    def start(self) -> None:
        """Starts ovsdb-server, then ovs-vswitchd, each once its socket answers."""
        self.dir.mkdir()
        if not SCHEMA.exists():
            raise EmulationError(
                f"Open vSwitch's schema {SCHEMA} is missing: install openvswitch-switch"
            )
        database = self.dir / "conf.db"
        command(
            "ovsdb-tool", "create", str(database), str(SCHEMA), what="creating the OVS database"
        )
        self._daemon(
            "ovsdb-server",
            str(database),
            f"--remote=punix:{self.db_socket}",
            f"--unixctl={self.dir / 'ovsdb.ctl'}",
            f"--log-file={self.dir / 'ovsdb.log'}",
            socket=self.db_socket,
        )
        self.vsctl("--no-wait", "init")
        self._daemon(
            "ovs-vswitchd",
            f"unix:{self.db_socket}",
            f"--unixctl={self.dir / 'vswitchd.ctl'}",
            f"--log-file={self.dir / 'vswitchd.log'}",
            socket=self.dir / "vswitchd.ctl",
        )

    def _daemon(self, program: str, *args: str, socket: Path) -> None:
        log = (self.dir / f"{program}.out").open("w")
        # Every default path of the daemons points into the run directory.
        env = os.environ | {
            name: str(self.dir)
            for name in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR")
        }
        daemon = subprocess.Popen(
            [program, *args], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        self._daemons.append(daemon)
        self.footprint.add_process(daemon.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not socket.exists():
            if daemon.poll() is not None or time.monotonic() > deadline:
                # Its log goes with the run's directory: the message carries its end.
                said = (self.dir / f"{program}.out").read_text(errors="replace").splitlines()
                raise EmulationError(f"{program} did not start: {' '.join(said[-3:])}")
            time.sleep(0.01)

    @property
    def vswitchd_pid(self) -> int:
        return self._daemons[-1].pid

    def enlarge_send_buffer(self, size: int) -> None:
        """Gives ovs-vswitchd's send socket `size` bytes of buffer.

        The userspace datapath sends every port's packets through one AF_PACKET
        socket, and a packet waiting in a port's qdisc is charged to that socket until
        it leaves: with the kernel's default send buffer (net.core.wmem_default, 208 KB)
        about 90 full-size packets can wait in all the switches' queues together, and
        a packet beyond that is dropped by ovs-vswitchd without a counter. The socket
        is taken from the daemon (pidfd_getfd) and its buffer set past wmem_max
        (SO_SNDBUFFORCE, root's); the socket exists once the datapath has sent a
        packet (`OpenFlowSeam.prime_datapath`)."""
        pid = self.vswitchd_pid
        fd = _send_socket_fd(pid)
        if fd is None:
            raise EmulationError("ovs-vswitchd has no send socket yet: it has sent no packet")
        pidfd = os.pidfd_open(pid)
        try:
            local = _pidfd_getfd(pidfd, fd)
        finally:
            os.close(pidfd)
        with socket.socket(fileno=local) as sock:
            sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, size)
            granted = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        if granted < size:
            raise EmulationError(f"ovs-vswitchd's send buffer is {granted} B, not {size} B")

    def send_errors(self) -> int:
        """The send errors ovs-vswitchd logged (rate-limited: at least this many packets
        were dropped on sending)."""
        log = self.dir / "vswitchd.log"
        if not log.exists():
            return 0
        return log.read_text(errors="replace").count("error sending Ethernet packet")

    def vsctl(self, *args: str) -> str:
        return command(
            "ovs-vsctl",
            f"--db=unix:{self.db_socket}",
            "--timeout=20",
            *args,
            what="configuring Open vSwitch",
        )

    def appctl(self, *args: str) -> str:
        return command(
            "ovs-appctl",
            f"--target={self.dir / 'vswitchd.ctl'}",
            "--timeout=20",
            *args,
            what="asking ovs-vswitchd",
        )

    def count_flows_every(self, ms: int) -> None:
        """Has ovs-vswitchd add what its datapath forwarded to the OpenFlow entries'
        counters every `ms` (it does so as it revalidates its datapath's flows, every
        500 ms by default: `other_config:max-revalidator`)."""
        self.vsctl("set", "Open_vSwitch", ".", f"other_config:max-revalidator={ms}")

    def settle_flow_counts(self) -> None:
        """Returns once the OpenFlow entries' counters hold every packet forwarded so
        far: after one whole revalidation round."""
        self.appctl("revalidator/wait")

    def stop(self) -> None:
        """Stops the daemons, ovs-vswitchd first (its bridges go with it)."""
        for daemon in reversed(self._daemons):
            if daemon.poll() is None:
                stop_process(daemon.pid)
            daemon.wait()
        self._daemons.clear()


def _send_socket_fd(pid: int) -> int | None:
    """The descriptor, in process `pid`, of an AF_PACKET socket bound to no protocol and
    no interface: how ovs-vswitchd's userspace datapath sends on every port (each
    port's receiving socket is bound to its interface)."""
    unbound = set()
    for line in Path(f"/proc/{pid}/net/packet").read_text().splitlines()[1:]:
        fields = line.split()  # sk RefCnt Type Proto Iface R Rmem User Inode
        if int(fields[3], 16) == 0 and int(fields[4]) == 0:
            unbound.add(f"socket:[{fields[8]}]")
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in unbound:
                return int(fd)
    return None


def _pidfd_getfd(pidfd: int, fd: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    local = libc.syscall(PIDFD_GETFD, pidfd, fd, 0)
    if local < 0:
        error = ctypes.get_errno()
        raise EmulationError(f"cannot reach ovs-vswitchd's send socket: {os.strerror(error)}")
    return local
