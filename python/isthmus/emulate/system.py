"""The host machine as the emulation sees it: the commands it runs (`ip`, `tc`,
`ethtool`, Open vSwitch's) and what its kernel can do (qdiscs, TCP congestion controls,
MPTCP), probed once, so a scenario the machine cannot emulate is refused by name before
anything starts."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TOOLS = {
    "ip": "iproute2",
    "tc": "iproute2",
    "ethtool": "ethtool",
    "ovsdb-tool": "openvswitch-switch",
    "ovsdb-server": "openvswitch-switch",
    "ovs-vswitchd": "openvswitch-switch",
    "ovs-vsctl": "openvswitch-switch",
}
"""Each command the emulation runs, with the Debian package that has it."""

QDISC_PROBES = {
    "htb": ["htb"],
    "tbf": ["tbf", "rate", "1mbit", "burst", "10kb", "latency", "10ms"],
    "pfifo": ["pfifo", "limit", "10"],
    "bfifo": ["bfifo", "limit", "10000"],
    "netem": ["netem", "delay", "1ms"],
    "red": [
        "red", "limit", "100000", "min", "10000", "max", "30000", "avpkt", "1000",
        "burst", "20", "probability", "0.1", "bandwidth", "1mbit", "ecn",
    ],
    "codel": ["codel"],
    "pie": ["pie"],
    "fq_codel": ["fq_codel"],
    "fq": ["fq"],
}  # fmt: skip
"""The queueing disciplines a scenario may need, each with the smallest setting that
the kernel accepts where it has the discipline."""

COMMAND_TIMEOUT_S = 30
"""A command that takes longer has hung (OVS waiting on a daemon that died, say)."""


class EmulationError(RuntimeError):
    """The emulation cannot go on: a command failed, or the machine lacks something."""


def command(
    *args: str,
    what: str,
    namespace: str | None = None,
    check: bool = True,
    stdin: str | None = None,
) -> str:
    """Runs `args` (in network namespace `namespace` if given) and returns its output;
    a failure is an EmulationError saying `what` was being done and what the command
    printed."""
    argv = list(args) if namespace is None else ["ip", "netns", "exec", namespace, *args]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            input=stdin,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise EmulationError(f"{what}: {argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise EmulationError(
            f"{what}: `{' '.join(argv)}` took over {COMMAND_TIMEOUT_S} s"
        ) from None
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise EmulationError(f"{what}: `{' '.join(argv)}` failed: {' '.join(message[-3:])}")
    return done.stdout


@dataclass(frozen=True)
class Capabilities:
    """What this machine can emulate."""

    qdiscs: frozenset[str]
    congestion_controls: frozenset[str]
    mptcp: bool


def missing_tools() -> list[str]:
    """The commands the emulation needs and this machine lacks, each with its package."""
    return [
        f"{tool} (Debian package {package})"
        for tool, package in TOOLS.items()
        if shutil.which(tool) is None
    ]


def check_machine() -> None:
    """Refuses a machine the emulation cannot run on: not root, or missing a command."""
    if os.geteuid() != 0:
        raise EmulationError(
            "emulation makes network namespaces, veth pairs and qdiscs: run it as root"
        )
    missing = missing_tools()
    if missing:
        raise EmulationError(
            f"emulation needs {', '.join(missing)}: install them (apt-get install "
            "openvswitch-switch ethtool iproute2)"
        )


def capabilities(scratch_namespace: str) -> Capabilities:
    """This kernel's qdiscs (each tried on a veth in `scratch_namespace`, made and
    removed here), TCP congestion controls and whether MPTCP is on."""
    command("ip", "netns", "add", scratch_namespace, what="probing the kernel")
    try:
        veth = ("ip", "link", "add", "probe0", "type", "veth", "peer", "name", "probe1")
        command(*veth, what="probing the kernel", namespace=scratch_namespace)
        qdiscs = set()
        for kind, setting in QDISC_PROBES.items():
            done = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    scratch_namespace,
                    "tc",
                    "qdisc",
                    "replace",
                    "dev",
                    "probe0",
                    "root",
                    *setting,
                ],  # fmt: skip
                capture_output=True,
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
            if done.returncode == 0:
                qdiscs.add(kind)
    finally:
        command(
            "ip", "netns", "del", scratch_namespace, what="removing the kernel probe", check=False
        )
    controls = _read("/proc/sys/net/ipv4/tcp_available_congestion_control").split()
    return Capabilities(
        frozenset(qdiscs), frozenset(controls), _read("/proc/sys/net/mptcp/enabled") == "1"
    )


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""
