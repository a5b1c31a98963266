"""The `isthmus` command line: run a scenario, list the bundled ones."""

from __future__ import annotations

import csv
import errno
import json
import os
import re
import stat
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from isthmus import bench as benchmark
from isthmus.inputs import allowing, excerpt, shown_path
from isthmus.results import (
    MAX_RUN_NAME_BYTES,
    remove_abandoned_partials,
    summarize,
    write_run,
)
from isthmus.scenario import (
    Scenario,
    ScenarioError,
    bundled_scenarios,
    load_scenario,
    resolve_scenario,
)
from isthmus.units import format_time, time_ps

if TYPE_CHECKING:
    import numpy as np

MAX_STUDY_SEEDS = 1000
"""`isthmus reproduce --seeds` at most: each seed runs the whole study."""

WORKERS_PER_CORE = 4
"""`isthmus sweep --workers` at most this many per core: runs are CPU-bound, and each
worker holds a simulation in memory."""


class _Commands(typer.core.TyperGroup):
    """The commands, each ending in one line, never a traceback, when the system refuses
    a file operation (a full disk, a permission, a name too long) or a compressed input
    ends early. Each command checks what it can first; this is for what no check can
    foresee."""

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except OSError as e:
            if e.errno == errno.EPIPE:
                raise  # output piped to a command that stopped reading: typer's to handle
            _fail(_system_refusal(e))
        except EOFError as e:
            _fail(f"an input file ends early (truncated or damaged): {e}")


def _system_refusal(error: OSError) -> str:
    """An OSError for a user: what failed, on which file, never more than a line."""
    where = next((f for f in (error.filename, error.filename2) if f is not None), None)
    reason = error.strerror or str(error) or type(error).__name__
    return f"{shown_path(where)}: {reason}" if where is not None else reason


app = typer.Typer(
    cls=_Commands,
    help="Isthmus: learning-augmented traffic control for datacenter networks.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def command():
    """The CLI as the console script runs it, its help free of typer's type labels
    (<str>, <bool>): an option shows a plain metavar (SEED, OUT), a flag or an argument
    (already named in capitals) nothing."""

    def plain(param) -> None:
        # Typer's own parameter classes: told apart by their attributes.
        hidden = getattr(param, "is_flag", False) or param.param_type_name == "argument"
        # Named after the option as typed (--json: JSON), not its Python parameter.
        longest = max(param.opts, key=len).lstrip("-") if param.opts else param.name or ""
        label = None if hidden else longest.replace("-", "_").upper()
        param.display_type_rich = lambda ctx: label

    cli = typer.main.get_command(app)
    for cmd in [cli, *getattr(cli, "commands", {}).values()]:
        for param in cmd.params:
            plain(param)
        make_help = cmd.get_help_option

        def help_option(ctx, make_help=make_help):
            option = make_help(ctx)
            if option is not None:
                plain(option)
            return option

        cmd.get_help_option = help_option
    return cli


def _print_version(value: bool) -> None:
    if value:
        from isthmus.results import isthmus_version

        print(f"isthmus {isthmus_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """Isthmus: learning-augmented traffic control for datacenter networks."""


console = Console()
errors = Console(stderr=True)


def _fail(message: str) -> NoReturn:
    # The message may quote the user's input: print it as it is, never as markup.
    errors.print(Text.assemble(("error: ", "bold red"), message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def check_output(path: Path, option: str, *, folder: bool = False, new: bool = False) -> None:
    """Refuses, before any work starts, an output the command could not write: a file
    (`folder=False`) must not be a folder and goes into a writable folder that exists; a
    folder (`folder=True`, created with its parents) must not be a file, and the nearest
    folder on its path that exists must be writable; `new`: it must not exist yet."""
    named = f"{option} {shown_path(path)}"
    target = _stat(path, named)
    if target is not None:
        if new:
            _fail(f"{named} already exists; choose another {option}")
        if folder and not stat.S_ISDIR(target.st_mode):
            _fail(f"{named} is a file, not a folder; give a folder")
        if not folder and stat.S_ISDIR(target.st_mode):
            _fail(f"{named} is a folder; give the path of a file")
        if not os.access(path, os.W_OK):
            _fail(f"{named} is not writable")
        return
    parent = path.absolute().parent
    if folder:
        while _stat(parent, named) is None:
            parent = parent.parent
    elif _stat(parent, named) is None:
        _fail(f"{named}: its folder {shown_path(parent)} does not exist; create it first")
    if not stat.S_ISDIR(os.stat(parent).st_mode):
        _fail(f"{named}: {shown_path(parent)} on its path is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        _fail(f"{named}: the folder {shown_path(parent)} is not writable")


def _stat(path: Path, named: str) -> os.stat_result | None:
    """`path`'s status, None if it does not exist; a path that cannot be one (a name too
    long, a file used as a folder) is refused, naming the option."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        _fail(f"{named}: a file on its path is used as a folder")
    except OSError as e:
        reason = "a name on it is too long" if e.errno == errno.ENAMETOOLONG else e.strerror
        _fail(f"{named}: {reason}")
    except ValueError:  # a NUL character
        _fail(f"{named} is not a usable path")


def _output_file(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer's callback for an option naming a file to write: checked as it is parsed."""
    if value is not None and not ctx.resilient_parsing:
        check_output(value, _option_name(param))
    return value


def _output_folder(
    ctx: typer.Context, param: typer.CallbackParam, value: Path | None
) -> Path | None:
    """Typer's callback for an option naming a folder to write into."""
    if value is not None and not ctx.resilient_parsing:
        check_output(value, _option_name(param), folder=True)
    return value


def _option_name(param: typer.CallbackParam) -> str:
    return max(param.opts, key=len) if param.opts else str(param.name)


def _write_text(path: Path, text: str, option: str) -> None:
    """Writes an output file checked by `check_output`, a failure (a full disk) being
    one line naming the option."""
    try:
        path.write_text(text)
    except OSError as e:
        _fail(f"could not write {option} {shown_path(path)}: {e.strerror or e}")


@app.command("list")
def list_scenarios() -> None:
    """Show the bundled scenarios."""
    table = Table("name", "topology", "description", title="bundled scenarios")
    for name, path in bundled_scenarios().items():
        scenario = load_scenario(path)
        table.add_row(name, scenario.topology.kind, _literal(first_sentence(scenario.description)))
    console.print(table)


# A full stop, ! or ? ends a sentence where the next word starts with a capital letter,
# or the paragraph ends; a full stop after an abbreviation (et al., Fig. 4) does not.
_SENTENCE_END = re.compile(
    r"(?<!\bet al)(?<!\bFig)(?<!\bFigs)(?<!\bEq)(?<!\bSec)(?<!\bvs)(?<!\bcf)"
    r"(?<!\be\.g)(?<!\bi\.e)(?<!\bno)[.!?](?=\s+[A-Z]|$)"
)


def first_sentence(description: str) -> str:
    """The first sentence of a description's first paragraph, lines joined (the whole
    paragraph if no sentence in it ends)."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph[: end.end()] if end else paragraph


@app.command()
def run(
    scenario: str = typer.Argument(..., help="A scenario file, or the name of a bundled one."),
    seed: int | None = typer.Option(None, help="Override the scenario's seed."),
    out: Path | None = typer.Option(
        None, callback=_output_folder, help="Run folder to write (default runs/NAME-...)."
    ),
    allow_path: list[Path] = typer.Option(
        [],
        "--allow-path",
        help="A folder outside the scenario's own from which its files may be read.",
    ),
    threads: int | None = typer.Option(
        None, help="Run in this many partitions side by side, a thread each."
    ),
    partitions: int | None = typer.Option(
        None, help="Partitions, if not one per thread (same results on any threads)."
    ),
) -> None:
    """Run a scenario with a progress bar, print a summary, write a run folder."""
    try:
        path = resolve_scenario(scenario)
        spec = with_threads(load_scenario(path), threads, partitions)
        if seed is not None and not 0 <= seed < 2**64:
            raise ScenarioError(f"--seed must be an integer in 0..2^64-1, got {excerpt(str(seed))}")
        with allowing(allow_path):
            sim = spec.build(seed=seed, base=path.parent)
    except ScenarioError as e:
        _fail(str(e))
    if out is None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path("runs") / f"{spec.name}-seed{sim.seed}-{stamp}"
    check_output(out, "--out", folder=True, new=True)
    if len(os.fsencode(out.name)) > MAX_RUN_NAME_BYTES:
        _fail(
            f"--out {shown_path(out)}: a run folder's name takes at most {MAX_RUN_NAME_BYTES} "
            "bytes; choose a shorter one"
        )
    _report_abandoned_partials()
    try:
        wall = _run_with_progress(sim, spec)
    except ValueError as e:
        # A control program's command the engine refused, say: one line, not a traceback.
        _fail(f"the run stopped at {format_time(sim.now)}: {e}")
    summary = summarize(sim, scenario=spec.name, wall_s=wall)
    folder = write_run(sim, out, scenario_text=path.read_text(), summary=summary)
    _print_summary(summary, folder)
    _print_expectations(spec, summary)


@app.command()
def emulate(
    scenario: str = typer.Argument(
        None, help="A scenario file, or the name of a bundled one (not with --clean)."
    ),
    seed: int | None = typer.Option(None, help="Override the scenario's seed."),
    out: Path | None = typer.Option(
        None, callback=_output_folder, help="Run folder to write (default runs/NAME-emulated-...)."
    ),
    scale: float = typer.Option(
        1.0, help="Divide every link rate by this (userspace Open vSwitch forwards ~1 Gb/s)."
    ),
    ignore_delay_below: str = typer.Option(
        "0s",
        help="Leave out link delays below this (the switches' own latency is larger than a "
        "microsecond's); needed for any delay on a kernel without the netem qdisc.",
    ),
    clean: bool = typer.Option(
        False, "--clean", help="Remove what killed emulation runs left behind, and nothing else."
    ),
    compare: bool = typer.Option(
        False,
        "--compare",
        help="Also run the scenario in the simulator (Linux hosts) and show both side by side.",
    ),
    seeds: int = typer.Option(
        1,
        min=1,
        max=100,
        help="Run this many seeds (the scenario's, or --seed, and those after it): a run "
        "folder each, and with --compare means with 95% intervals.",
    ),
) -> None:
    """Run a scenario on real switches: Open vSwitch bridges driven over OpenFlow 1.3 by
    the scenario's control apps, hosts in network namespaces running Linux TCP (needs
    root, openvswitch-switch, ethtool and `pip install 'isthmus[emulate]'`)."""
    try:
        from isthmus import emulate as emulation
        from isthmus.emulate.compare import side_by_side
    except ImportError as e:
        _fail(
            f"isthmus emulate needs the emulate extra ({e.name} is missing): "
            "pip install 'isthmus[emulate]'"
        )
    if clean:
        if scenario is not None:
            _fail("--clean takes no scenario: it removes what killed runs left behind")
        removed = emulation.clean()
        console.print(f"removed {len(removed)} leftovers" + "".join(f"\n  {r}" for r in removed))
        return
    if scenario is None:
        _fail("give a scenario to emulate (or --clean)")
    try:
        path = resolve_scenario(scenario)
        spec = load_scenario(path)
        if out is None:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
            out = Path("runs") / f"{spec.name}-emulated-{stamp}"
        check_output(out, "--out", folder=True, new=True)
        first = spec.seed if seed is None else seed
        chosen = list(range(first, first + seeds))
        results = []
        for run_seed in chosen:
            result = emulation.emulate(
                spec,
                seed=run_seed,
                base=path.parent,
                rate_scale=scale,
                ignore_delay_below=ignore_delay_below,
            )
            # Each seed's folder as soon as it has run: a later failure keeps it.
            emulation.write_run(result, out if seeds == 1 else out / f"seed{run_seed}")
            results.append(result)
            table = Table(title=f"{spec.name} (emulated, seed {run_seed})", show_header=False)
            for key, value in result.summary.items():
                if not isinstance(value, dict):
                    table.add_row(key, str(value))
            console.print(table)
        comparison = side_by_side(spec, results, chosen, path.parent) if compare else None
    except (ScenarioError, ValueError, emulation.EmulationError) as e:
        _fail(str(e))
    except KeyboardInterrupt:
        _fail("stopped by Ctrl-C; everything the run made is removed")
    if comparison is not None:
        (out / "compare.json").write_text(json.dumps(comparison, indent=2) + "\n")
        _print_side_by_side(comparison, len(chosen))
    console.print(f"run folder{'s' if seeds > 1 else ''}: {out}")


def _print_side_by_side(comparison: dict, seeds: int) -> None:
    def shown(mean: float, half: float) -> str:
        return f"{mean:.4g}" if seeds == 1 else f"{mean:.4g} ± {half:.2g}"

    columns = ["figure", "simulated", "emulated", "emulated / simulated"]
    if seeds > 1:
        columns.append("emulated - simulated, 95% (Welch)")
    title = "side by side" + (f", means over {seeds} seeds ± 95% half-width" if seeds > 1 else "")
    table = Table(*columns, title=title)
    for key, row in comparison.items():
        cells = [
            key,
            shown(row["simulated"], row["simulated_half"]),
            shown(row["emulated"], row["emulated_half"]),
            "-" if row["ratio"] is None else f"{row['ratio']:.3g}",
        ]
        if seeds > 1:
            low_high = row["difference"]
            cells.append("-" if low_high is None else f"[{low_high[0]:.3g}, {low_high[1]:.3g}]")
        table.add_row(*cells)
    console.print(table)


def _report_abandoned_partials() -> None:
    """Removes the half-written run folders of runs killed outright, wherever they were
    writing, and says so: the user may wonder where a run's output went."""
    for folder in remove_abandoned_partials():
        errors.print(
            _literal(f"removed {folder}: a run folder half-written by a run that was killed"),
            soft_wrap=True,
        )


def _print_expectations(spec: Scenario, summary: dict) -> None:
    """The figures the scenario says a correct run shows, and whether this one does. A
    figure the scenario expects at its own seed only is shown, not judged, in a run
    with another seed: that seed draws another network or traffic."""
    if not spec.expect and not spec.expect_at_seed:
        return
    own_seed = summary["seed"] == spec.seed
    table = Table(
        "figure", "expected", "holds at", "this run", "", title="what a correct run shows"
    )
    rows = [(f, r, "any seed", True) for f, r in spec.expect.items()]
    rows += [(f, r, f"seed {spec.seed} only", own_seed) for f, r in spec.expect_at_seed.items()]
    for figure, (low, high), holds_at, judged in rows:
        value = summary.get(figure)
        if not isinstance(value, (int, float)):
            verdict, shown = "", "no such figure"
        else:
            inside = low <= value <= high
            verdict = ("ok" if inside else "OUTSIDE") if judged else "not checked"
            shown = f"{value:.4g}"
        table.add_row(_literal(figure), f"{low:g} to {high:g}", holds_at, shown, verdict)
    console.print(table)
    if not own_seed and spec.expect_at_seed:
        console.print(
            f"Figures for seed {spec.seed} only are not checked: this run used seed "
            f"{summary['seed']}, and the seed draws what they depend on (traffic, paths)."
        )


def _progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
    )


def flows_ended(sim) -> int:
    """Flows that have ended (finished, or datagram flows settled with losses), counting
    flows later incast rounds will add as not ended: never negative."""
    return sim.expected_flows - sim.unfinished_flows


def _run_with_progress(sim, spec: Scenario) -> float:
    """Runs the scenario; the bar follows simulated time, or finished flows when the run
    ends with the last flow."""
    duration = time_ps(spec.run.duration)
    by_flows = spec.ends_with_flows(sim)
    with _progress_bar() as progress:
        total = sim.expected_flows if by_flows else duration
        task = progress.add_task(spec.name, total=total, status="")

        def on_progress(now: int) -> None:
            if by_flows:
                ended = flows_ended(sim)
                status = f"{ended}/{sim.expected_flows} flows at {format_time(now)}"
                progress.update(task, completed=ended, status=status)
            else:
                status = f"{format_time(now)} of {format_time(duration)}"
                progress.update(task, completed=now, status=status)

        return spec.execute(sim, on_progress)


def _print_summary(summary: dict, folder: Path) -> None:
    table = Table(title=f"{summary['scenario']} (seed {summary['seed']})", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    delivered = summary["delivered_fraction"]
    rows = [
        ("simulated time", f"{summary['simulated_s'] * 1e3:.3f} ms"),
        ("flows finished", f"{summary['flows_finished']} / {summary['flows']}"),
        (
            "bytes delivered",
            f"{summary['bytes_delivered']:,}"
            + (f" ({delivered:.2%} of sent)" if delivered is not None else ""),
        ),
        ("packets delivered", f"{summary['packets_delivered']:,}"),
        ("packets dropped", f"{summary['packets_dropped']:,}"),
        ("ECN marks", f"{summary['ecn_marks']:,}"),
        ("max switch queue", f"{summary['max_switch_queue_packets']} packets"),
        *_slowdown_rows(summary),
        *_stream_rows(summary),
        ("mean queueing delay", f"{summary['mean_queue_wait_us']:.3f} us"),
        (
            "p99 queueing delay",
            f"{summary['p99_queue_wait_us']:.3f} us"
            f" (at switches {summary['p99_switch_queue_wait_us']:.3f} us)",
        ),
        ("busiest link utilization", f"{summary['max_link_utilization']:.1%}"),
        ("events", f"{summary['events']:,}"),
        ("wall clock", f"{summary['wall_s']:.2f} s"),
        ("events per second", f"{summary['events_per_s']:,}"),
        ("peak memory", f"{summary['peak_rss_mb']:.0f} MB"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    console.print(f"run folder: [bold]{folder}[/]")


def _stream_rows(summary: dict) -> list[tuple[str, str]]:
    if not summary.get("streams"):
        return []
    loss = summary["stream_loss"]
    return [
        (
            "datagram streams",
            f"{summary['streams']}: {summary['stream_goodput_gbps']:.3f} Gb/s delivered"
            + (f", {loss:.2%} lost" if loss is not None else ""),
        )
    ]


def _slowdown_rows(summary: dict) -> list[tuple[str, str]]:
    if summary.get("mean_fct_us") is None:
        return []
    s = summary["slowdown"]["all"]
    return [
        ("mean flow completion time", f"{summary['mean_fct_us']:.1f} us"),
        ("slowdown mean / p50 / p99", f"{s['mean']:.2f} / {s['p50']:.2f} / {s['p99']:.2f}"),
    ]


def with_threads(spec: Scenario, threads: int | None, partitions: int | None) -> Scenario:
    """`spec` with `--threads` and `--partitions` in its [run], checked as the file's own
    keys would be."""
    if threads is None and partitions is None:
        return spec
    run = spec.run.model_dump()
    run.update(
        {k: v for k, v in (("threads", threads), ("partitions", partitions)) if v is not None}
    )
    try:
        return spec.model_copy(update={"run": type(spec.run).model_validate(run)})
    except ValidationError as e:
        raise ScenarioError(
            "--threads and --partitions take whole numbers of at least 1: "
            + "; ".join(f"{err['loc'][0]}: {err['msg']}" for err in e.errors())
        ) from None


@app.command()
def bench(
    size: str = typer.Argument("medium", help=f"One of {', '.join(benchmark.SIZES)}."),
    json_out: Path | None = typer.Option(
        None, "--json", callback=_output_file, help="Also write the figures as JSON."
    ),
    threads: int = typer.Option(1, help="Run in this many partitions, a thread each."),
) -> None:
    """Run the leafspine-websearch reference benchmark and report speed and FCTs."""
    if size not in benchmark.SIZES:
        _fail(f"unknown benchmark size {excerpt(size)}; choose one of {', '.join(benchmark.SIZES)}")
    with _progress_bar() as progress:
        task = progress.add_task(f"leafspine-websearch-{size}", total=None, status="")

        def on_progress(finished: int, flows: int) -> None:
            progress.update(
                task, total=flows, completed=finished, status=f"{finished}/{flows} flows"
            )

        try:
            result = benchmark.run_benchmark(size, on_progress, threads=threads)
        except ValueError as e:
            _fail(f"--threads {threads}: {e}")
    table = Table(title=f"leafspine-websearch {size}", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    for name, value in benchmark.format_rows(result):
        table.add_row(name, value)
    console.print(table)
    if json_out is not None:
        _write_text(json_out, json.dumps(result, indent=2) + "\n", "--json")
        console.print(_literal(f"figures written to {json_out}"))


@app.command()
def sweep(
    scenario: str = typer.Argument(..., help="A scenario file, or the name of a bundled one."),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="PATH=VALUES: a field and its values, a range start:stop:step (ends included) "
        "or a list a,b,c; seed=1,5,9 runs exactly those seeds.",
    ),
    seeds: int = typer.Option(
        1, help="Seeds per point: the scenario's seed and the next ones (or --set seed=...)."
    ),
    out: Path | None = typer.Option(
        None, callback=_output_folder, help="Sweep folder (default sweeps/NAME)."
    ),
    workers: int = typer.Option(0, help="Parallel runs (default: every core)."),
    ray: str | None = typer.Option(
        None, help="Run on the Ray cluster at this address ('auto': one on this machine)."
    ),
) -> None:
    """Run a scenario over a grid of field values and seeds, in parallel; a rerun skips
    the points already done."""
    from isthmus.sweep import plan
    from isthmus.sweep import sweep as run_sweep

    cores = os.cpu_count() or 1
    if not 0 <= workers <= WORKERS_PER_CORE * cores:
        _fail(
            f"--workers must be 0 (one per core) to {WORKERS_PER_CORE * cores} "
            f"({WORKERS_PER_CORE} per core), got {excerpt(str(workers))}"
        )
    try:
        path = resolve_scenario(scenario)
        spec = load_scenario(path)
        points = plan(path.read_text(), set_, seeds)
    except ValueError as e:
        _fail(str(e))
    folder = out if out is not None else Path("sweeps") / spec.name
    check_output(folder, "--out", folder=True)
    _report_abandoned_partials()
    with _progress_bar() as progress:
        task = progress.add_task(spec.name, total=len(points), status="")

        def on_point(name: str, status: str) -> None:
            progress.update(task, advance=1, status=f"{status}: {name}")

        try:
            outcome = run_sweep(
                points,
                path.parent,
                folder,
                workers=workers or cores,
                ray_address=ray,
                on_point=on_point,
            )
        except ValueError as e:
            _fail(str(e))
    console.print(
        f"{len(outcome.ran)} ran, {len(outcome.skipped)} already done, "
        f"{len(outcome.failed)} failed, in [bold]{folder}[/]"
    )
    for name, error in sorted(outcome.failed.items()):
        errors.print(f"[bold red]failed[/] {name}: {error}")
    if outcome.failed:
        raise typer.Exit(1)
    console.print(f'Query them: isthmus query "SELECT * FROM runs" --runs {folder}')


@app.command("forecast-bench")
def forecast_bench(
    series: Path | None = typer.Option(
        None, help="A CSV file to score instead of the bundled traces."
    ),
    column: str | None = typer.Option(None, help="The CSV column (header or 0-based number)."),
    season: int | None = typer.Option(None, help="Season length of --series, for Holt-Winters."),
    window: int | None = typer.Option(None, help="Window BS (with --lead and --horizon)."),
    lead: int = typer.Option(1, help="Steps ahead of the first forecast N."),
    horizon: int = typer.Option(1, help="Forecast steps O."),
    quick: bool = typer.Option(False, help="One setting on each series' last rows."),
    models: str | None = typer.Option(
        None, help="Comma-separated forecasters to score (default: all, neural ones included)."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", callback=_output_file, help="Also write the scores as JSON."
    ),
) -> None:
    """Score every forecaster on real traffic series: MAE % ± SDAE, MSE, training and
    inference time per model (Diolkos Table 1, IBCN Table IV)."""
    from isthmus.experiments import forecast_bench as fb
    from isthmus.predict import models as predict_models

    if (series is None) != (column is None):
        _fail("--series and --column go together: --series FILE.csv --column NAME")
    try:
        chosen = (
            [fb.Series(series.name, _series_column(series, column), season)]
            if series is not None
            else fb.bundled_series() + fb.recorded_series()
        )
        settings = ((window, lead, horizon),) if window is not None else None
        with _progress_bar() as progress:
            runs = len(chosen) * len(settings or (fb.QUICK_SETTINGS if quick else fb.SETTINGS))
            task = progress.add_task("forecast-bench", total=runs, status="")

            def on_result(name: str, setting: tuple[int, int, int]) -> None:
                progress.update(task, advance=1, status=f"{name} BS/N/O {setting}")

            names = [m.strip() for m in models.split(",")] if models is not None else None
            if names is None and not predict_models.torch_available():
                names = [m for m in predict_models.MODELS if m not in predict_models.NEURAL]
                progress.console.print(
                    _literal(
                        f"skipping {', '.join(predict_models.NEURAL)}: PyTorch is not "
                        "installed (pip install '.[neural]' from the repository adds it)"
                    )
                )
            results = fb.run(
                chosen, quick=quick, settings=settings, models=names, on_result=on_result
            )
    except (ValueError, ImportError) as e:
        _fail(str(e))
    for result in results:
        title = (
            f"{result['series']}: window {result['window']}, lead {result['lead']}, "
            f"horizon {result['horizon']}"
        )
        table = Table("model", "MAE % ± SDAE", "MSE", "train s", "predict ms", title=title)
        for name, m in result["models"].items():
            table.add_row(
                name,
                f"{m['mae_pct']:.2f} ± {m['sdae_pct']:.2f}",
                f"{m['mse']:.4g}",
                f"{m['train_s']:.3f}",
                f"{m['infer_ms']:.3f}",
            )
        console.print(table)
    if json_out is not None:
        layout = results[0] if len(results) == 1 else {"results": results}
        _write_text(json_out, json.dumps(layout, indent=2) + "\n", "--json")
        console.print(_literal(f"scores written to {json_out}"))


def _series_column(path: Path, column: str) -> np.ndarray:
    """The --series file's column, what the csv module or the decoder refuses (a field
    over its size limit, bytes that are not UTF-8: a .gz, say) one line naming --series."""
    from isthmus.predict.series import load_column

    try:
        return load_column(path, column)
    except UnicodeDecodeError as e:
        _fail(
            f"--series {shown_path(path)} is not UTF-8 text (byte {e.start} is not): give a "
            "CSV file, unpacked if it came compressed"
        )
    except csv.Error as e:
        _fail(f"--series {shown_path(path)} is not a CSV file this can read: {e}")


@app.command()
def report(
    runs: list[Path] = typer.Argument(..., help="One or more run folders."),
    out: Path = typer.Option(
        Path("report"), callback=_output_folder, help="Folder for report.html and its plots."
    ),
) -> None:
    """Write an HTML report of run folders: slowdown by size, FCT CDFs, throughput and
    queues over time, utilization heat maps, and a side-by-side table."""
    from isthmus.report import write_report

    try:
        page = write_report(runs, out)
    except ValueError as e:
        _fail(str(e))
    console.print(f"report written to [bold]{page}[/]")


@app.command()
def compare(
    a: Path = typer.Argument(..., help="A run folder, or a folder of runs (e.g. seeds)."),
    b: Path = typer.Argument(..., help="The same for the other side."),
    show_all: bool = typer.Option(False, "--all", help="Show every figure, not only changes."),
) -> None:
    """Compare two sets of runs: each figure's means, B − A and its 95% confidence
    interval across the runs (Welch); changes significant under Holm's correction for
    all the figures tested at once are marked."""
    from isthmus.compare import compare as compare_runs

    try:
        differences = compare_runs(a, b)
    except ValueError as e:
        _fail(str(e))
    table = Table("figure", f"A: {a.name}", f"B: {b.name}", "B − A", "95% CI", "n", "")
    for column in (table.columns[0], table.columns[-1]):
        column.no_wrap = True
    shown = 0
    for d in differences:
        if not (show_all or d.significant or (d.low is None and d.delta != 0)):
            continue
        shown += 1
        ci = "–" if d.low is None else f"[{d.low:.4g}, {d.high:.4g}]"
        relative = f" ({d.delta / d.mean_a:+.1%})" if d.mean_a else ""
        mark = "[bold]significant[/]" if d.significant else ""
        table.add_row(
            d.label,
            f"{d.mean_a:.4g}",
            f"{d.mean_b:.4g}",
            f"{d.delta:+.4g}{relative}",
            ci,
            f"{d.n_a}/{d.n_b}",
            mark,
        )
    console.print(table)
    tested = sum(d.p_value is not None for d in differences)
    console.print(
        f"n: runs on each side. Significant: Welch's test, Holm-corrected over the {tested} "
        "figures tested (family-wise error 5 %)."
    )
    if not shown:
        console.print("No figure differs significantly (--all shows every one).")
    if any(d.low is None for d in differences):
        console.print("One side has a single run: differences carry no interval (run more seeds).")


@app.command()
def query(
    sql: str = typer.Argument(
        ..., help="SQL over the views flows, ports, timeseries, rounds, runs."
    ),
    runs: Path = typer.Option(Path("runs"), help="A run folder, or a folder of run folders."),
    csv: Path | None = typer.Option(
        None, callback=_output_file, help="Write the whole result to this CSV file."
    ),
    limit: int = typer.Option(50, help="Rows to print."),
) -> None:
    """Query run folders with SQL (DuckDB); every view has a `run` column."""
    from isthmus.query import query as run_query

    try:
        result = run_query(sql, runs)
    except ValueError as e:
        _fail(str(e))
    table = Table(*result.column_names, title=f"{result.num_rows} rows")
    for row in result.slice(0, limit).to_pylist():
        table.add_row(*(_cell(v) for v in row.values()))
    console.print(table)
    if result.num_rows > limit:
        console.print(f"({result.num_rows - limit} more rows; --limit or --csv for all)")
    if csv is not None:
        import pyarrow.csv as pacsv

        pacsv.write_csv(result, csv)
        console.print(f"result written to [bold]{csv}[/]")


def _cell(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _json_scalar(value: object) -> object:
    """NumPy scalars in study results, as the Python numbers JSON takes."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


@app.command()
def reproduce(
    study: str = typer.Argument(..., help="The study to reproduce (see `isthmus studies`)."),
    quick: bool = typer.Option(False, "--quick", help="A reduced run, under two minutes."),
    seeds: int = typer.Option(1, help="Seeds to run: 1, 2, ... (5 or more for intervals)."),
    jobs: int = typer.Option(0, "--jobs", help="Jobs run at once (default: every core)."),
    ray: str | None = typer.Option(
        None, help="Run the jobs on the Ray cluster at this address ('auto': one on this machine)."
    ),
    out: Path | None = typer.Option(
        None,
        callback=_output_folder,
        help="Study folder: a file per finished job (default studies/NAME or NAME-quick).",
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Keep the jobs --out already holds; run only the rest."
    ),
    from_folder: Path | None = typer.Option(
        None, "--from", help="Show the table of a finished study folder; run nothing."
    ),
    json_out: Path | None = typer.Option(
        None,
        "--json",
        callback=_output_file,
        help="Also write the table, claims and raw results as JSON.",
    ),
    figures: Path | None = typer.Option(
        None,
        "--figures",
        callback=_output_folder,
        help="Also draw the study's figures (PNG) into this folder.",
    ),
) -> None:
    """Reproduce a published study and print the table and claims it argues from. Its
    jobs run in parallel, each stored as it finishes: --resume goes on after a stop."""
    from isthmus import studies
    from isthmus.experiments import StudyFailed, load_study, run_study

    try:
        module = studies.study(study)
    except ValueError as e:
        _fail(str(e))
    if figures is not None and not hasattr(module, "figures"):
        _fail(f"study {study} draws no figures; leave out --figures")
    if from_folder is not None:
        given = [o for o, v in (("--out", out), ("--resume", resume), ("--ray", ray)) if v]
        if given:
            _fail(f"--from runs nothing: leave out {', '.join(given)}")
        try:
            results = load_study(from_folder, module)
        except ValueError as e:
            _fail(str(e))
    else:
        if not 1 <= seeds <= MAX_STUDY_SEEDS:
            _fail(f"--seeds must be 1 to {MAX_STUDY_SEEDS}, got {excerpt(str(seeds))}")
        cores = os.cpu_count() or 1
        if not 0 <= jobs <= WORKERS_PER_CORE * cores:
            _fail(
                f"--jobs must be 0 (one per core) to {WORKERS_PER_CORE * cores} "
                f"({WORKERS_PER_CORE} per core), got {excerpt(str(jobs))}"
            )
        folder = out if out is not None else Path("studies") / f"{study}{'-quick' if quick else ''}"
        check_output(folder, "--out", folder=True)
        with _progress_bar() as progress:
            task = progress.add_task(study, total=None, status="")

            def on_progress(done: int, total: int, label: str) -> None:
                progress.update(task, total=total, completed=done, status=_literal(label))

            try:
                results = run_study(
                    module,
                    quick=quick,
                    seeds=list(range(1, seeds + 1)),
                    folder=folder,
                    workers=jobs or cores,
                    ray_address=ray,
                    resume=resume,
                    on_progress=on_progress,
                )
            except StudyFailed as e:
                progress.stop()
                for end in e.failed:
                    errors.print(
                        f"[bold red]failed[/] {_literal(end.job.name)}: {_literal(end.error or '')}"
                    )
                _fail(str(e))
            except ValueError as e:
                progress.stop()
                _fail(str(e))
        ran = len(results.records) - results.reused
        console.print(_literal(f"{ran} jobs ran, {results.reused} kept from before, in {folder}"))
    _show_study(module, results, json_out, figures)


def _show_study(module, results, json_out: Path | None, figures: Path | None) -> None:
    from dataclasses import replace

    shown = replace(module.table(results), departures=list(module.DEPARTURES))
    table = Table(title=shown.title)
    for i, column in enumerate(shown.columns):
        table.add_column(
            _literal(column), justify="left" if i == 0 else "right", no_wrap=i == 0, overflow="fold"
        )
    for row in shown.rows:
        table.add_row(*(_literal(cell) for cell in row))
    console.print(table)
    for note in shown.notes:
        console.print(_literal(note))
    if shown.departures:
        departures = Table(
            "aspect", "paper", "here", "sensitivity", title="departures from the paper"
        )
        for d in shown.departures:
            departures.add_row(
                *(_literal(v) for v in (d.aspect, d.paper, d.ours, d.sensitivity or "-"))
            )
        console.print(departures)
    marks = {True: "[bold green]holds[/]", False: "[bold red]does not hold[/]"}
    for claim in shown.claims:
        mark = marks.get(claim.holds, "[bold yellow]no verdict[/]")
        console.print(f"{_literal(claim.statement)}: {mark} ({_literal(claim.evidence)})")
    if json_out is not None:
        document = {
            "study": module.NAME,
            "title": module.TITLE,
            "quick": results.quick,
            "seeds": results.seeds,
            **shown.as_dict(),
            "results": results.records,
        }
        _write_text(json_out, json.dumps(document, indent=2, default=_json_scalar) + "\n", "--json")
        console.print(_literal(f"written to {json_out}"))
    if figures is not None:
        figures.mkdir(parents=True, exist_ok=True)
        for path in module.figures(results, figures):
            console.print(f"drew [bold]{_literal(str(path))}[/]")


@app.command("studies")
def list_studies() -> None:
    """Show the studies `isthmus reproduce` knows."""
    from isthmus import studies

    table = Table("name", "reproduces", title="studies")
    for name, module in studies.available().items():
        table.add_row(name, _literal(module.TITLE))
    console.print(table)


@app.command()
def show(
    scenario: str = typer.Argument(..., help="A scenario file, or the name of a bundled one."),
    paths: tuple[int, int] | None = typer.Option(
        None, help="Also list every shortest path between these two hosts."
    ),
    allow_path: list[Path] = typer.Option(
        [],
        "--allow-path",
        help="A folder outside the scenario's own from which its files may be read.",
    ),
) -> None:
    """Print what a scenario builds: its topology (nodes, links by rate and delay) and
    every setting it runs with, the defaults it inherits included."""
    from collections import Counter

    from isthmus.units import format_time

    try:
        path = resolve_scenario(scenario)
        spec = load_scenario(path)
        with allowing(allow_path):
            topology = spec.topology.build(path.parent)
            # Asked-for paths are found before anything is printed: a bad host is one line.
            routes = None if paths is None else _shortest_paths(spec, path.parent, paths)
    except ValueError as e:  # ScenarioError, or a builder's refusal (too many ports)
        _fail(str(e))
    nodes = topology.nodes()
    roles = Counter(zip(nodes["kind"], nodes["role"], strict=True))
    console.print(_literal(f"{spec.name}: {topology.num_nodes} nodes, {topology.num_hosts} hosts"))
    table = Table("nodes", "count", title="topology")
    for (kind, role), count in sorted(roles.items()):
        table.add_row(_literal(f"{kind} ({role})" if role else kind), str(count))
    console.print(table)
    links = topology.links()
    groups = Counter(zip(links["rate_bps"].tolist(), links["delay_ps"].tolist(), strict=True))
    table = Table("links", "rate", "delay", title="links")
    for (rate, delay), count in sorted(groups.items()):
        table.add_row(str(count), f"{rate / 1e9:g} Gb/s", format_time(delay))
    console.print(table)
    settings = spec.model_dump(mode="json", exclude={"traffic", "topology", "description"})
    settings["tcp"] = spec.tcp_params().model_dump(mode="json")

    def shown(value: object) -> str:
        # Durations stored in picoseconds read better in their own unit.
        if isinstance(value, str) and value.endswith("ps") and value[:-2].isdigit():
            return format_time(int(value[:-2]))
        return json.dumps(value)

    meanings = _setting_meanings()
    table = Table("setting", "value", "meaning", title="settings (defaults included)")
    for section, values in settings.items():
        if isinstance(values, dict):
            for key, value in values.items():
                meaning = meanings.get((section, key), "")
                table.add_row(*map(_literal, (f"{section}.{key}", shown(value), meaning)))
        else:
            table.add_row(_literal(section), _literal(shown(values)), _literal(""))
    console.print(table)
    if routes is not None:
        for route in routes:
            console.print(_literal(route))


def _setting_meanings() -> dict[tuple[str, str], str]:
    """Each scenario setting's meaning, (section, key) -> text, as the scenario schema
    gives it (the engine's declaration, for the engine's parameters)."""
    schema = Scenario.model_json_schema()
    definitions = schema.get("$defs", {})
    out = {}
    for section, spec in schema["properties"].items():
        refs = [spec, *spec.get("anyOf", [])]
        ref = next((r["$ref"] for r in refs if "$ref" in r), None)
        if ref is None:
            continue
        for key, field in definitions[ref.rsplit("/", 1)[1]].get("properties", {}).items():
            if field.get("description"):
                out[(section, key)] = field["description"]
    return out


def _shortest_paths(spec: Scenario, base: Path, hosts: tuple[int, int]) -> list[str]:
    """Every shortest path between two hosts of the scenario's network, as node names."""
    from isthmus.control.plane import ControlPlane

    plane = ControlPlane(spec.build(base=base))
    names = plane.ports.names
    return [" -> ".join(names[n] for n in route) for route in plane.paths.shortest(*hosts)]


@app.command()
def schema(
    out: Path | None = typer.Option(
        None, callback=_output_file, help="Write it to this file instead of printing it."
    ),
) -> None:
    """Print the JSON Schema of scenario files, for editors that complete and check TOML
    (Even Better TOML: `#:schema ./scenario.schema.json` at the top of a file)."""
    text = json.dumps(Scenario.model_json_schema(), indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        _write_text(out, text, "--out")
        console.print(_literal(f"written to {out}"))


@app.command()
def parameters(
    match: str | None = typer.Argument(
        None, help="Only parameters whose type, kind or name contains this (e.g. 'aqm', 'rto')."
    ),
    markdown: bool = typer.Option(False, help="Print docs/parameters.md instead of a table."),
    out: Path | None = typer.Option(
        None, callback=_output_file, help="Write it to this file instead of printing it."
    ),
) -> None:
    """Every parameter the engine takes: its meaning, unit, default and valid range, as
    the engine declares it (the one declaration Python's models and the scenario schema
    are built from)."""
    from isthmus import parameter_docs

    if markdown:
        if match is not None:
            _fail("--markdown writes the whole page; leave out the filter")
        text = parameter_docs.markdown()
        if out is None:
            sys.stdout.write(text)
        else:
            _write_text(out, text, "--out")
            console.print(_literal(f"written to {out}"))
        return
    if out is not None:
        _fail("--out goes with --markdown")
    needle = (match or "").lower()
    chosen = [
        row
        for row in parameter_docs.rows()
        if needle in f"{row['type']} {row['kind']} {row['parameter']}".lower()
    ]
    if not chosen:
        _fail(f"no parameter's type, kind or name contains {match!r}")
    table = Table("type", "parameter", "unit", "default", "range", "meaning", title="parameters")
    for row in chosen:
        where = row["type"] + (f" {row['kind']}" if row["kind"] else "")
        cells = (where, row["parameter"], row["unit"], row["default"], row["range"], row["meaning"])
        table.add_row(*(_literal(cell) for cell in cells))
    console.print(table)


def _literal(text: str) -> Text:
    """User or study text shown as it is: never read as markup or emoji codes."""
    return Text(str(text))


if __name__ == "__main__":
    app()
