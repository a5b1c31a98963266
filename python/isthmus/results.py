"""Run folders: the complete record of one simulation run, written atomically.

A run folder holds `flows.parquet` (one row per flow), `ports.parquet` (one row per
egress port), `timeseries.parquet` (when sampling was on; one row per sample and
port), `summary.json` and a copy of the scenario. It is assembled in a hidden sibling
folder (`.NAME.partial-PID`) and renamed into place, so it is either complete or absent.

A writer interrupted by a signal removes its partial folder (`abandon_partials`, which
the command line's signal handlers call). One killed outright cannot: every writer notes
its partial folder in a record under the user's state folder (`partials_record`), and
the next run, wherever it writes, removes the ones whose writer is gone
(`remove_abandoned_partials`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import resource
import shutil
import socket
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from isthmus.metrics import flow_times, slowdown_summary
from isthmus.network_metrics import (
    bisection_fraction,
    flow_throughput_bps,
    jain_index,
    switch_ports,
)
from isthmus.simulation import Simulation
from isthmus.units import seconds


def isthmus_version() -> str:
    try:
        return metadata.version("isthmus")
    except metadata.PackageNotFoundError:
        return "unknown"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


def port_frame(sim: Simulation) -> dict[str, np.ndarray | list]:
    ports = sim.ports()
    nodes = sim.topology.nodes()
    names = nodes["name"]
    elapsed = max(sim.now, 1)
    frame: dict[str, np.ndarray | list] = {
        "port_index": np.arange(len(ports["node"]), dtype=np.uint32),
        "node_name": [names[n] for n in ports["node"]],
        "peer_name": [names[n] for n in ports["peer_node"]],
        "role": [nodes["role"][n] for n in ports["node"]],
    }
    frame.update(ports)
    frame["utilization"] = ports["busy_ps"] / elapsed
    return frame


def flow_frame(sim: Simulation) -> dict[str, np.ndarray]:
    flows = sim.flows()
    return {"flow_id": np.arange(sim.num_flows, dtype=np.uint32), **flows, **flow_times(sim)}


def summarize(sim: Simulation, *, scenario: str, wall_s: float) -> dict:
    flows = sim.flows()
    ports = sim.ports()
    headline = sim.headline()
    is_switch = switch_ports(sim)
    tx_packets = int(ports["tx_packets"].sum())
    finished = headline["flows_finished"]
    bytes_sent = int(flows["bytes_sent"].sum())
    bytes_delivered = headline["bytes_delivered"]
    times = flow_times(sim)
    # Datagram streams (UDP, BCN) end at a time, not with their last byte: completion
    # times say nothing of them, delivery and loss do.
    stream = flows["datagram"].astype(bool)
    stream_sent = int(flows["bytes_sent"][stream].sum())
    stream_delivered = int(flows["bytes_delivered"][stream].sum())
    throughput = flow_throughput_bps(sim)
    return {
        "scenario": scenario,
        "seed": sim.seed,
        "isthmus_version": isthmus_version(),
        "simulated_s": seconds(sim.now),
        "wall_s": round(wall_s, 4),
        "events": sim.events_processed,
        "events_per_s": round(sim.events_processed / wall_s) if wall_s > 0 else None,
        "packet_hops": sim.packet_hops,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "flows": sim.num_flows,
        "flows_finished": finished,
        "flows_unfinished": sim.num_flows - finished,
        "bytes_sent": bytes_sent,
        "bytes_delivered": bytes_delivered,
        "delivered_fraction": bytes_delivered / bytes_sent if bytes_sent else None,
        "packets_sent": int(flows["packets_sent"].sum()),
        "packets_delivered": int(flows["packets_delivered"].sum()),
        "packets_dropped": headline["packets_dropped"],
        "packets_unroutable": int(sim.node_drops()["unroutable"].sum()),
        "packets_dropped_by_rules": int(sim.node_drops()["rule_drops"].sum()),
        # Packets whose time-to-live ran out: each was caught in a forwarding loop.
        "loops": headline["loops"],
        "ecn_marks": int(ports["ecn_marks"].sum()),
        "max_switch_queue_packets": int(ports["max_queue_packets"][is_switch].max(initial=0)),
        "mean_queue_wait_us": float(ports["wait_ps"].sum() / tx_packets / 1e6)
        if tx_packets
        else 0.0,
        "p99_queue_wait_us": (sim.queue_wait_quantile(0.99) or 0.0) / 1e6,
        "p99_switch_queue_wait_us": (sim.queue_wait_quantile(0.99, "switches") or 0.0) / 1e6,
        "max_link_utilization": headline["max_link_utilization"],
        "mean_fct_us": headline["mean_fct_us"],
        "slowdown": slowdown_summary(flows["size_bytes"][~stream], times["slowdown"][~stream]),
        "streams": int(stream.sum()),
        "stream_goodput_gbps": stream_delivered * 8 / max(seconds(sim.now), 1e-12) / 1e9
        if stream.any()
        else None,
        "stream_loss": 1 - stream_delivered / stream_sent if stream_sent else None,
        "retransmissions": int(flows["retransmissions"].sum()),
        "timeouts": int(flows["timeouts"].sum()),
        "out_of_order_packets": int(flows["out_of_order"].sum()),
        "pfc_pauses": int(ports["pfc_pauses"].sum()),
        "bisection_fraction": bisection_fraction(sim),
        "flow_throughput_jain": jain_index(throughput[~np.isnan(throughput)]),
    }


def _timeseries_table(sim: Simulation) -> pa.Table | None:
    samples = sim.samples()
    if samples is None:
        return None
    times = samples["time_ps"]
    rows, ports = samples["queue_bytes"].shape
    columns = {
        "time_ps": np.repeat(times, ports),
        "port_index": np.tile(np.arange(ports, dtype=np.uint32), rows),
    }
    for name in ("queue_packets", "queue_bytes", "tx_bytes", "drop_packets", "ecn_marks"):
        columns[name] = samples[name].reshape(-1)
    return pa.table(columns)


_PARTIAL = re.compile(r"\..+\.partial-(\d+)(?:-([0-9a-f]{8}))?")
MAX_RUN_NAME_BYTES = 255 - len("..partial--") - 7 - 8
"""The longest run-folder name: its partial folder's (.NAME.partial-PID-MACHINE, a pid
of at most 7 digits, a machine tag of 8) must fit in a file name, 255 bytes on most
filesystems."""


def _machine_tag() -> str:
    """8 hex digits naming this machine, its boot and its pid namespace: a writer's pid
    means something only where the tag is the same. A run folder on a shared filesystem
    may be written from another node of a cluster, or from another container."""
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


MACHINE = _machine_tag()
RECORD_BYTES = 4096
"""A record holds one path: more than this is not a record this module wrote."""

_writing: dict[Path, Path | None] = {}
"""The partial folders this process is writing now, each with its note in the record
(see `abandon_partials`)."""


def remove_stale_partials(folder: Path) -> list[Path]:
    """Removes half-written run folders (`.NAME.partial-PID`) whose writer is gone (a
    run killed mid-write); returns what it removed. A live writer's folder stays."""
    removed = []
    for entry in folder.iterdir():
        if _is_abandoned(entry):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _is_abandoned(path: Path) -> bool:
    return _writer_gone(path.name) and path.is_dir()


def _writer_gone(name: str) -> bool:
    """Whether `name` is a partial folder's whose writer is known to have ended: one of
    this machine's (or an untagged one, as earlier versions wrote) whose pid is gone. A
    partial folder another machine writes is never judged here."""
    match = _PARTIAL.fullmatch(name)
    if match is None or match.group(2) not in (None, MACHINE):
        return False
    return not _alive(int(match.group(1)))


def partials_record() -> Path:
    """The folder where writers note the partial folders they are writing:
    $XDG_STATE_HOME/isthmus/partials (XDG_STATE_HOME defaults to ~/.local/state)."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "isthmus" / "partials"


def remove_abandoned_partials() -> list[Path]:
    """Removes every partial folder noted in `partials_record` whose writer is gone,
    wherever it lies, and the notes of the ones gone already; returns what it removed.
    Only a folder named as a partial folder is ever removed, whatever a note says."""
    removed = []
    try:
        notes = list(partials_record().iterdir())
    except OSError:
        return removed  # no record yet, or none readable: nothing noted
    for note in notes:
        try:
            with open(note, "rb") as f:
                partial = Path(os.fsdecode(f.read(RECORD_BYTES)))
        except OSError:
            continue
        if _PARTIAL.fullmatch(partial.name) is not None and not _writer_gone(partial.name):
            continue  # a live writer's, or another machine's
        if _PARTIAL.fullmatch(partial.name) is not None and partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
            removed.append(partial)
        note.unlink(missing_ok=True)
    return removed


def _note_partial(partial: Path) -> Path | None:
    """Notes `partial` in the record; returns the note, or None where the record cannot
    be written (a read-only home): noting is a safeguard, never a reason to fail a run."""
    try:
        folder = partials_record()
        folder.mkdir(parents=True, exist_ok=True)
        fd, note = tempfile.mkstemp(dir=folder, prefix=f"{os.getpid()}-")
        with os.fdopen(fd, "wb") as f:
            f.write(os.fsencode(partial.absolute()))
    except OSError:
        return None
    return Path(note)


def abandon_partials() -> None:
    """Removes the partial folders this process is writing, and their notes: for a
    signal handler that ends the process at once (os._exit), skipping the writer's own
    clean-up."""
    for partial, note in list(_writing.items()):
        shutil.rmtree(partial, ignore_errors=True)
        _forget(note)


def _forget(note: Path | None) -> None:
    if note is not None:
        note.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive, and not ours to judge
    except OverflowError:
        return False  # no process has such a number
    return True


def write_run(sim: Simulation, out: Path, *, scenario_text: str, summary: dict) -> Path:
    """Writes the run folder `out`, which must not exist yet; returns it."""
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"run folder '{out}' already exists; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(out.parent)
    remove_abandoned_partials()
    partial = out.parent / f".{out.name}.partial-{os.getpid()}-{MACHINE}"
    if partial.exists():
        shutil.rmtree(partial)
    # Known to the signal handlers before it exists, then noted in the record: an
    # interrupt at any instant from here on leaves nothing behind (a note made but not
    # yet known here names a writer that is gone, and the next run removes it).
    _writing[partial] = None
    _writing[partial] = _note_partial(partial)
    try:
        partial.mkdir()
        pq.write_table(pa.table(flow_frame(sim)), partial / "flows.parquet")
        pq.write_table(pa.table(port_frame(sim)), partial / "ports.parquet")
        series = _timeseries_table(sim)
        if series is not None:
            pq.write_table(series, partial / "timeseries.parquet")
        rounds = sim.incast_rounds()
        if len(rounds["job"]):
            pq.write_table(pa.table(rounds), partial / "rounds.parquet")
        (partial / "scenario.toml").write_text(scenario_text)
        (partial / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        os.rename(partial, out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        _forget(_writing.pop(partial))
    return out
