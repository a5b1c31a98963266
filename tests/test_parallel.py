"""Partitioned runs from Python: the same tables on any number of threads, the same
network as the sequential engine, and what they cannot do yet refused by name."""

import hashlib

import numpy as np
import pytest
from scipy import stats

from isthmus import Simulation, Topology
from isthmus.bench import scenario_path
from isthmus.metrics import bucket_of, flow_times
from isthmus.scenario import ScenarioError, load_scenario, parse_scenario


def _benchmark(size: str = "small", seed: int = 1, partitions: int = 1, threads: int = 1):
    path = scenario_path(size)
    spec = load_scenario(path)
    sim = spec.build(seed=seed, base=path.parent)
    if partitions > 1:
        sim.set_partitions(partitions, threads)
    sim.run(spec.run.duration, stop_when_flows_finish=True)
    return sim


def _digest(sim: Simulation) -> str:
    h = hashlib.sha256()
    for table in (sim.flows(), sim.ports()):
        for key in sorted(table):
            h.update(key.encode())
            h.update(np.ascontiguousarray(table[key]).tobytes())
    for at in ("switches", "hosts"):
        h.update(repr([sim.queue_wait_quantile(q, at) for q in (0.5, 0.99, 1.0)]).encode())
    return h.hexdigest()


def test_four_partitions_give_the_same_tables_on_one_two_and_four_threads():
    digests = {threads: _digest(_benchmark(partitions=4, threads=threads)) for threads in (1, 2, 4)}
    assert len(set(digests.values())) == 1, digests
    # One partition is the sequential engine, whatever the threads.
    whole = _benchmark()
    one = load_scenario(scenario_path("small")).build(base=scenario_path("small").parent)
    one.set_partitions(1, 4)
    one.run("1s", stop_when_flows_finish=True)
    assert _digest(one) == _digest(whole)
    assert whole.partitions["partitions"] == 1


def test_partitions_run_the_same_network_as_the_sequential_engine_in_distribution():
    # Per seed the runs differ only in the order of equal-time events across partitions;
    # over seeds, each size bucket's mean slowdown is not told apart from the sequential
    # engine's (Welch, 95 %), and every flow finishes with every byte in both.
    whole, split = {1: [], 2: [], 3: []}, {1: [], 2: [], 3: []}
    for seed in range(1, 6):
        for runs, partitions in ((whole, 1), (split, 2)):
            sim = _benchmark(seed=seed, partitions=partitions, threads=partitions)
            flows = sim.flows()
            assert (flows["finish_ps"] >= 0).all()
            assert (flows["bytes_delivered"] == flows["size_bytes"]).all()
            slowdown = flow_times(sim)["slowdown"]
            buckets = bucket_of(flows["size_bytes"])
            for bucket in runs:
                runs[bucket].append(float(slowdown[buckets == bucket].mean()))
    for bucket in whole:
        assert stats.ttest_ind(whole[bucket], split[bucket], equal_var=False).pvalue > 0.05
        gap = abs(np.mean(split[bucket]) - np.mean(whole[bucket])) / np.mean(whole[bucket])
        assert gap < 0.05, (bucket, whole[bucket], split[bucket])


def test_the_plan_shows_what_it_split():
    sim = Simulation(Topology.leaf_spine(2, 4, 8))
    sim.set_partitions(2)
    plan = sim.partitions
    assert plan["partitions"] == 2 and plan["nodes"] == [19, 19]
    assert plan["lookahead_ps"] == 1_000_000 and plan["cross_links"] == 4


def _sampled(partitions: int, threads: int = 1) -> Simulation:
    """The small benchmark's fabric and traffic for 2 ms, every port sampled each 100 us."""
    path = scenario_path("small")
    spec = load_scenario(path)
    spec = spec.model_copy(
        update={"telemetry": spec.telemetry.model_copy(update={"sample_interval": "100us"})}
    )
    sim = spec.build(base=path.parent)
    if partitions > 1:
        sim.set_partitions(partitions, threads)
    sim.run("2050us")
    return sim


def test_a_partitioned_run_samples_every_port_from_the_partition_that_runs_it():
    two = _sampled(2)
    samples, ports = two.samples(), two.ports()
    # The same rows on any number of threads, at the times the sequential engine samples.
    again = _sampled(2, threads=2).samples()
    for key in samples:
        assert np.array_equal(samples[key], again[key]), key
    assert np.array_equal(samples["time_ps"], _sampled(1).samples()["time_ps"])
    # The last row is at 2 ms, 50 us before the end: each port sent since then at most
    # what its link carries in 50 us (and a packet under way). A port read from a
    # partition that does not run it would stand still at nothing sent.
    assert int(samples["time_ps"][-1]) == 2_000_000_000
    since = ports["tx_bytes"].astype(np.int64) - samples["tx_bytes"][-1].astype(np.int64)
    assert (since >= 0).all()
    assert (since <= ports["rate_bps"] // 8 * 50e-6 + 9_000).all(), since.max()
    assert int(samples["tx_bytes"][-1].sum()) > 0
    assert (np.diff(samples["tx_bytes"].astype(np.int64), axis=0) >= 0).all()


def test_what_partitions_cannot_do_yet_is_refused_by_name():
    sim = Simulation(Topology.leaf_spine(2, 4, 8))
    sim.add_tcp_flows([0], [20], [10_000], [0])
    sim.set_partitions(2)
    sim.run("1ms")
    with pytest.raises(ValueError, match="runs in partitions and has started"):
        sim.add_tcp_flows([1], [21], [10_000], [2_000_000_000])
    with pytest.raises(ValueError, match="partitions must be in 1..1024"):
        Simulation(Topology.leaf_spine(2, 4, 8)).set_partitions(0)
    with pytest.raises(ValueError, match="choose at most 4 partitions"):
        Simulation(Topology.leaf_spine(2, 4, 8)).set_partitions(5)
    # A scenario says which key: its [run] threads.
    text = (
        scenario_path("small")
        .read_text()
        .replace('stop_when = "flows_finished"', 'stop_when = "flows_finished"\nthreads = 9')
    )
    with pytest.raises(ScenarioError, match="run.threads: .*choose at most 4 partitions"):
        parse_scenario(text).build(base=scenario_path("small").parent)


def test_the_cli_runs_a_scenario_and_the_benchmark_in_partitions(tmp_path):
    from typer.testing import CliRunner

    from isthmus.cli import app

    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, ["bench", "small", "--threads", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert '"threads": 2' in out.read_text() and '"finished": 235' in out.read_text()
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "leafspine-websearch-small",
            "--threads",
            "2",
            "--partitions",
            "4",
            "--out",
            str(run),
        ],
    )
    assert result.exit_code == 0, result.output
    # The run folder holds what the same split gives from Python, not the whole run's.
    import pyarrow.parquet as pq

    finish = pq.read_table(run / "flows.parquet").column("finish_ps").to_numpy()
    assert (finish == _benchmark(partitions=4, threads=1).flows()["finish_ps"]).all()
    assert not (finish == _benchmark().flows()["finish_ps"]).all()
    refused = CliRunner().invoke(app, ["run", "leafspine-websearch-small", "--threads", "0"])
    assert refused.exit_code != 0 and "--threads" in refused.output
