"""Processes and signals: a killed sweep takes its workers with it and one sweep at a time
owns its folder; an interrupted write leaves no half-written run folder, and one a
killed writer left is removed by the next run, wherever it writes; Ctrl-C during
start-up ends the command in one line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from scenario_texts import HEAD, RUN, UDP
from typer.testing import CliRunner

import isthmus
from isthmus.cli import app
from isthmus.results import MACHINE
from isthmus.sweep import SWEEP_LOCK, owning

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads processes from Linux's /proc"
)

runner = CliRunner()
CONSOLE = Path(sys.executable).parent / "isthmus"

# Each point runs for minutes: a worker found alive after its sweep was killed is an
# orphan still running its point, never one that happened to be finishing.
LONG_SCENARIO = (
    HEAD.replace('"fz"', '"long"')
    + UDP.replace("1Gbps", "5Gbps").replace("10KB", "100GB")
    + RUN.replace("1ms", "100s")
)


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended while we looked
        # The command name, in parentheses, may hold spaces: the fields follow its ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan may wait for a reaper that never comes)."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_a_killed_sweep_takes_its_workers_with_it_and_a_running_sweep_owns_its_folder(
    tmp_path,
):
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_SCENARIO)
    out = tmp_path / "sweep"
    args = ["sweep", str(scenario), "--set", "seed=1,2,3,4", "--workers", "2", "--out", str(out)]
    sweep = subprocess.Popen(
        [str(CONSOLE), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the signals below reach this process alone
    )
    workers: list[int] = []
    try:
        workers = _wait_for(
            lambda: len(kids := _children(sweep.pid)) >= 2 and kids, 90, "two sweep workers"
        )
        # Both workers running points, not merely started.
        _wait_for(lambda: (out / SWEEP_LOCK).exists(), 30, "the sweep's lock")
        time.sleep(3)
        assert all(_running(w) for w in workers)

        # While it runs, a second sweep of the same folder is refused, naming the first.
        second = runner.invoke(app, args)
        assert second.exit_code == 2, second.output
        assert "in use by a sweep still running" in second.output
        assert f"pid {sweep.pid}" in second.output

        sweep.send_signal(signal.SIGKILL)
        sweep.wait(timeout=10)
        _wait_for(lambda: not any(_running(w) for w in workers), 5, f"workers {workers} to end")
    finally:
        # Orphans (the regression this test looks for) must not outlive it.
        started = {*workers, *(_children(sweep.pid) if sweep.poll() is None else ())}
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
        for pid in started:
            if _running(pid) and re.search("isthmus|multiprocessing", _command_line(pid)):
                os.kill(pid, signal.SIGKILL)

    # The dead sweep's lock is taken over, never stale.
    with owning(out):
        assert (out / SWEEP_LOCK).read_text().strip() == str(os.getpid())


WRITER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import isthmus.entry  # the console script's signal handlers
    from isthmus import Link, Simulation, Topology, results

    topology = Topology.leaf_spine(1, 2, 2, Link("10Gbps", "1us"), Link("10Gbps", "1us"))
    sim = Simulation(topology)
    sim.run("1us")
    write_table = results.pq.write_table

    def slow(table, path):
        write_table(table, path)
        print("writing", flush=True)
        time.sleep(120)

    results.pq.write_table = slow
    results.write_run(sim, Path(sys.argv[1]), scenario_text="", summary={})
    """
)


def _interrupt_a_write(out: Path, signum: int, state: Path) -> subprocess.CompletedProcess:
    """Starts writing run folder `out` in another process, sends it `signum` once the
    first file is written, and returns how it ended."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(state)},
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "writing\n", writer.stderr.read()
        assert [p.name for p in out.parent.glob(".*partial*")] == [
            f".{out.name}.partial-{writer.pid}-{MACHINE}"
        ]
        writer.send_signal(signum)
        stdout, stderr = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    return subprocess.CompletedProcess(writer.args, writer.returncode, stdout, stderr)


def test_ctrl_c_while_writing_a_run_folder_leaves_no_half_written_folder(tmp_path):
    state = tmp_path / "state"
    out = tmp_path / "runs" / "run"
    out.parent.mkdir()
    ended = _interrupt_a_write(out, signal.SIGINT, state)
    assert ended.returncode == 130, ended.stderr
    assert ended.stderr.strip() == "interrupted"
    assert list(out.parent.iterdir()) == []
    assert list((state / "isthmus" / "partials").iterdir()) == []


def test_a_run_folder_half_written_by_a_killed_run_is_removed_by_the_next_run_anywhere(
    tmp_path, monkeypatch
):
    state = tmp_path / "state"
    out = tmp_path / "there" / "run"
    out.parent.mkdir()
    killed = _interrupt_a_write(out, signal.SIGKILL, state)
    assert killed.returncode == -signal.SIGKILL
    (left,) = out.parent.glob(".*partial*")

    # The next run writes somewhere else altogether, and says what it removed.
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    elsewhere = tmp_path / "elsewhere" / "run"
    result = runner.invoke(app, ["run", "incast-udp", "--out", str(elsewhere)])
    assert result.exit_code == 0, result.output
    assert not left.exists() and list(out.parent.iterdir()) == []
    assert f"removed {left}: a run folder half-written by a run that was killed" in result.output
    assert list((state / "isthmus" / "partials").iterdir()) == []
    assert (elsewhere / "summary.json").exists()


def test_ctrl_c_early_in_start_up_ends_in_one_line_not_a_traceback():
    # Delays across the start-up: Python's own, the package's first import, the command
    # line's imports, and the command itself.
    for delay_ms in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 25, 30, 40]:
        process = subprocess.Popen(
            [str(CONSOLE), "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(delay_ms / 1000)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        if err == "KeyboardInterrupt\n" or re.match("Fatal Python error|python: failed", err):
            # Python's own start-up (streams, site, .pth files, reading the script): no
            # Python frame of the script yet, so not the package's to cover.
            continue
        if "Traceback" in err:
            # Python's search for the package and the package's own first lines (no
            # imports, a few definitions; in isthmus.entry, up to the line that installs
            # the handler, where a signal that came a moment earlier is raised) come
            # before the handler can be installed: the traceback may show them and the
            # frozen import machinery, never an import made before the handler (a line of
            # any other module).
            frames = re.findall(r'File "([^"]+)"', err)
            package = Path(isthmus.__file__)
            allowed = {str(CONSOLE), str(package), str(package.parent / "entry.py")}
            assert all(f.startswith("<frozen ") or f in allowed for f in frames), (delay_ms, err)
            continue
        # Ended by the signal before Python handles it (-SIGINT), by the handler (130),
        # or finished first.
        assert process.returncode in (-signal.SIGINT, 130, 0), (delay_ms, err)
        if process.returncode == 130:
            assert err == "interrupted\n", (delay_ms, err)
