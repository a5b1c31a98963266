"""What an emulation run has put on the machine, written down as it goes, so that
whatever stops the run (an error, Ctrl-C, SIGTERM, even SIGKILL) everything it made can
be found and removed, and nothing it did not make is touched.

Each run has a short tag in every name it gives (namespaces `isthmus-<tag>-...`,
interfaces `ix<tag>...`) and a record, `<tag>.json` in `STATE_DIR`, rewritten whole after
every addition: the pid (and start time) of the process that owns the run, the
daemons' and runners' pids, namespaces, interfaces and its run directory. `clean()`
removes the runs whose owner is gone."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from isthmus.emulate.system import command

STATE_DIR = Path(os.environ.get("ISTHMUS_EMULATE_STATE", "/run/isthmus-emulate"))
"""Where run records live (the environment variable moves it, for tests)."""

NAMESPACE_PREFIX = "isthmus-"
INTERFACE_PREFIX = "ix"
STOP_WAIT_S = 5.0
"""How long a stopped process gets to exit before it is killed."""


def process_start(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), None if it is gone: a
    pid with another start time is another process that took the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: fields count from its end.
    return int(stat.rsplit(")", 1)[1].split()[19])


@dataclass
class Footprint:
    tag: str
    owner: int
    owner_start: int | None
    run_dir: str
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, run_root: Path) -> Footprint:
        """A new run's record, with a tag no recorded run has."""
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        while True:
            tag = secrets.token_hex(2)
            if not (STATE_DIR / f"{tag}.json").exists() and not _named_like(tag):
                break
        run_dir = Path(run_root) / f"isthmus-emulate-{tag}"
        run_dir.mkdir(parents=True)
        footprint = cls(tag, os.getpid(), process_start(os.getpid()), str(run_dir))
        footprint.save()
        return footprint

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.tag}.json"

    @property
    def directory(self) -> Path:
        return Path(self.run_dir)

    def namespace(self, node: int) -> str:
        return f"{NAMESPACE_PREFIX}{self.tag}-n{node}"

    def interface(self, node: int, port: int) -> str:
        """The root namespace's end of node `node`'s port `port` (at most 15 characters,
        the kernel's limit, for up to 10^7 node-port digits)."""
        return f"{INTERFACE_PREFIX}{self.tag}n{node}p{port}"

    def bridge(self, node: int) -> str:
        """Switch `node`'s bridge (its internal port is an interface of that name)."""
        return f"{INTERFACE_PREFIX}{self.tag}s{node}"

    def save(self) -> None:
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(asdict(self)))
        partial.replace(self.path)

    def add_process(self, pid: int) -> None:
        self.processes.append((pid, process_start(pid)))
        self.save()

    def add_namespace(self, name: str) -> None:
        self.namespaces.append(name)
        self.save()

    def add_interface(self, name: str) -> None:
        self.interfaces.append(name)
        self.save()

    def owner_alive(self) -> bool:
        return self.owner_start is not None and process_start(self.owner) == self.owner_start

    def remove(self) -> list[str]:
        """Stops every process and deletes every namespace, interface and the run
        directory of this run, then its record; returns what it removed."""
        removed = []
        for pid, started in reversed(self.processes):
            if alive(pid, started):
                stop_process(pid)
                removed.append(f"process {pid}")
        for name in self.interfaces:
            if Path(f"/sys/class/net/{name}").exists():
                command("ip", "link", "del", name, what=f"removing {name}", check=False)
                removed.append(f"interface {name}")
        for name in self.namespaces:
            if Path(f"/run/netns/{name}").exists():
                command("ip", "netns", "del", name, what=f"removing {name}", check=False)
                removed.append(f"namespace {name}")
        if self.directory.exists():
            shutil.rmtree(self.directory, ignore_errors=True)
            removed.append(f"directory {self.run_dir}")
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        return removed


def alive(pid: int, started: int | None) -> bool:
    """Whether the process that started as `pid` at `started` still runs (a zombie,
    waiting for a parent to read its exit, does not)."""
    return started is not None and process_start(pid) == started and _running(pid)


def stop_process(pid: int) -> None:
    """SIGTERM, then SIGKILL if `pid` has not exited within STOP_WAIT_S."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if not _running(pid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its parent does not)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _named_like(tag: str) -> bool:
    """Whether a namespace or interface already has a name run `tag` would give: a tag
    is only taken if nothing on the machine could be mistaken for its run's."""
    namespaces = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    if any(n.startswith(f"{NAMESPACE_PREFIX}{tag}-") for n in namespaces):
        return True
    return any(n.startswith(f"{INTERFACE_PREFIX}{tag}") for n in os.listdir("/sys/class/net"))


def recorded() -> list[Footprint]:
    """Every run on record."""
    if not STATE_DIR.is_dir():
        return []
    footprints = []
    for path in sorted(STATE_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        data["processes"] = [tuple(p) for p in data["processes"]]
        footprints.append(Footprint(**data))
    return footprints


def clean() -> list[str]:
    """Removes what runs whose owning process is gone left behind (a run still going is
    left alone); returns what was removed."""
    removed = []
    for footprint in recorded():
        if not footprint.owner_alive():
            removed += footprint.remove()
    return removed
