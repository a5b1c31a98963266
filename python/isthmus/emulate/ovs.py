"""A private Open vSwitch: its own ovsdb-server and ovs-vswitchd, each with its run
directory, database, sockets and log in the run's directory, never the system's.
Bridges use the userspace datapath (`datapath_type=netdev`): no kernel module needed."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from isthmus.emulate.footprint import Footprint, _stop
from isthmus.emulate.system import EmulationError, command

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
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
                raise EmulationError(
                    f"{program} did not start: see {self.dir / (program + '.out')}"
                )
            time.sleep(0.01)

    def vsctl(self, *args: str) -> str:
        return command(
            "ovs-vsctl",
            f"--db=unix:{self.db_socket}",
            "--timeout=20",
            *args,
            what="configuring Open vSwitch",
        )

    def stop(self) -> None:
        """Stops the daemons, ovs-vswitchd first (its bridges go with it)."""
        for daemon in reversed(self._daemons):
            if daemon.poll() is None:
                _stop(daemon.pid)
            daemon.wait()
        self._daemons.clear()
