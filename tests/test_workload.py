"""Workloads: shipped distributions, Poisson arrivals at a load, flow-list replay."""

import textwrap

import numpy as np
import pytest

from isthmus import ScenarioError, Simulation, Topology, parse_scenario
from isthmus.flows import Poisson, generate_flows
from isthmus.workload import bundled_cdfs, read_flow_list, size_distribution


@pytest.mark.parametrize("name", bundled_cdfs())
def test_every_shipped_distribution_loads_and_samples_its_mean(name):
    dist = size_distribution(name)
    topo = Topology.leaf_spine(1, 2, 8)
    # About 20 000 arrivals: the sampled sizes' mean must approach the distribution's.
    window_ps = int(20_000 * dist.mean_bytes * 8 / (0.5 * 10e9 * 16) * 1e12)
    flows = generate_flows(
        topo, pattern="random", arrivals=Poisson(load=0.5), stop=window_ps, seed=3, sizes=name
    )
    sizes = flows["size_bytes"].astype(float)
    assert len(sizes) > 200
    assert sizes.min() >= 1
    standard_error = sizes.std() / np.sqrt(len(sizes))
    assert abs(sizes.mean() - dist.mean_bytes) < 5 * standard_error + 1


def test_poisson_arrivals_offer_the_target_load_within_3_percent():
    topo = Topology.leaf_spine(2, 4, 8)
    seconds = 4
    flows = generate_flows(
        topo, pattern="other_racks", arrivals=Poisson(load=0.3), stop=seconds * 10**12, seed=11
    )
    offered = flows["size_bytes"].sum() * 8 / seconds / 32
    assert abs(offered / (0.3 * 10e9) - 1) < 0.03
    assert np.all(flows["src"] // 8 != flows["dst"] // 8)
    gaps = np.diff(np.sort(flows["start_ps"][flows["src"] == 0]).astype(float))
    # Exponential gaps: coefficient of variation 1.
    assert abs(gaps.std() / gaps.mean() - 1) < 0.1


def test_a_flow_list_is_replayed_exactly(tmp_path):
    path = tmp_path / "flows.csv"
    path.write_text(
        "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,5,30000,0\n1,6,1,2000,5000000\n"
    )
    sim = Simulation(Topology.leaf_spine(2, 2, 4), ecn_threshold="65pkts")
    cols = read_flow_list(path, sim.topology.num_hosts)
    sim.add_tcp_flows(cols["src"], cols["dst"], cols["size"], cols["start"])
    assert sim.run("10ms", stop_when_flows_finish=True)
    flows = sim.flows()
    assert list(flows["size_bytes"]) == [30000, 2000]
    assert list(flows["bytes_delivered"]) == [30000, 2000]
    assert list(flows["start_ps"]) == [0, 5_000_000]


def test_a_flow_list_spread_over_many_blocks_reads_whole_and_in_order(tmp_path):
    # A small read block makes pyarrow split every column into chunks.
    import pyarrow.csv as pacsv

    from isthmus import workload

    path = tmp_path / "flows.csv"
    rows = [f"{i},{i % 7},{7 + i % 5},{1000 + 3 * i},{i * 10}" for i in range(5000)]
    path.write_text("flow_id,src_host,dst_host,size_bytes,start_ps\n" + "\n".join(rows) + "\n")
    table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=4096))
    column = table.column("size_bytes")
    assert column.num_chunks > 1
    values = workload._as_numpy(column)
    assert values.tolist() == column.to_pylist()
    assert workload._as_numpy(column.slice(1234, 100)).tolist() == list(
        range(1000 + 3 * 1234, 1000 + 3 * 1334, 3)
    )
    cols = read_flow_list(path, 12)
    assert cols["size"].tolist() == [1000 + 3 * i for i in range(5000)]


def test_reading_a_flow_list_leaves_pandas_unloaded(tmp_path):
    # Reading needs no pandas; pyarrow's own NumPy conversion loads it (it is installed,
    # for statsmodels), which took 50 MB of a benchmark process.
    import subprocess
    import sys

    path = tmp_path / "flows.csv"
    path.write_text("flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,5,30000,0\n")
    code = (
        "import sys; from isthmus.workload import read_flow_list; "
        f"read_flow_list({str(path)!r}, 8); print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("csv", "message"),
    [
        ("flow_id,src,dst\n0,1,2\n", "missing column"),
        (
            "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,99,10,0\n",
            "row 1: dst_host 99 does not exist",
        ),
        (
            "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,1,10,0\n1,2,2,10,0\n",
            "row 2: src_host equals dst_host",
        ),
        (
            "flow_id,src_host,dst_host,size_bytes,start_ps\n0,0,1,-10,0\n",
            "row 1: size_bytes is negative",
        ),
    ],
)
def test_bad_flow_lists_are_refused_with_the_row(tmp_path, csv, message):
    path = tmp_path / "bad.csv"
    path.write_text(csv)
    with pytest.raises(ValueError, match=message):
        read_flow_list(path, 8)


SCENARIO = """
name = "w"
[topology]
kind = "leaf_spine"
spines = 2
leaves = 2
hosts_per_leaf = 4
[network]
ecn_threshold = "65pkts"
[[traffic]]
kind = "poisson_flows"
sizes = "{sizes}"
load = 0.3
stop = "2ms"
[run]
duration = "200ms"
stop_when = "flows_finished"
"""


def test_scenario_workload_runs_to_completion_and_bad_cdfs_name_the_block(tmp_path):
    sim = parse_scenario(SCENARIO.format(sizes="websearch")).build()
    assert sim.num_flows > 0
    assert sim.run("200ms", stop_when_flows_finish=True)
    (tmp_path / "bad.txt").write_text("10 0.5\n5 1\n")
    bad = parse_scenario(SCENARIO.format(sizes="bad.txt"))
    with pytest.raises(ScenarioError, match=r"traffic\[0\]: .*bad\.txt.*point 2: size 5 is below"):
        bad.build(base=tmp_path)
    with pytest.raises(ScenarioError, match=r"traffic\[0\]: no flow-size distribution 'nope'"):
        parse_scenario(SCENARIO.format(sizes="nope")).build(base=tmp_path)
    with pytest.raises(ScenarioError, match=r"traffic\.0\.load: Input should be greater than 0"):
        parse_scenario(SCENARIO.format(sizes="websearch").replace("load = 0.3", "load = -1"))


def test_unfinished_flows_are_reported_not_dropped():
    text = textwrap.dedent(SCENARIO.format(sizes="websearch")).replace(
        'duration = "200ms"', 'duration = "1ms"'
    )
    scenario = parse_scenario(text)
    sim = scenario.build()
    assert not sim.run("1ms", stop_when_flows_finish=True)
    flows = sim.flows()
    assert sim.unfinished_flows == int((flows["finish_ps"] < 0).sum()) > 0
