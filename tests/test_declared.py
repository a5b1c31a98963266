"""Each parameter declared once, in the engine: Python's models, the scenario schema,
`isthmus parameters` and docs/parameters.md are built from that declaration, and what
they send the engine takes as it is."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from isthmus import Simulation, Topology, _core, declared, parameter_docs
from isthmus.arguments import checked
from isthmus.cli import app
from isthmus.queues import (
    CoDel,
    DropTail,
    Drr,
    Fifo,
    Fq,
    Pie,
    Pifo,
    Ramp,
    Red,
    StrictPriority,
    Wfq,
    queue_config,
)
from isthmus.scenario import Scenario
from isthmus.transport import TcpParams
from isthmus.wire import deserialised

DOCS = Path(__file__).resolve().parents[1] / "docs" / "parameters.md"

# One valid value of every scheduler and AQM kind, each field at a non-default value
# where it has one, so a field Python and the engine name or scale differently shows.
SCHEDULERS = [
    Fifo(),
    StrictPriority(classes=3),
    Drr(quanta=["1500B", "9000B"]),
    Wfq(weights=[1, 4]),
    Fq(quantum="3000B"),
    Pifo(rank="deadline", budgets=["10us", "250us"]),
    Pifo(rank="start_time"),
]
AQMS = [
    DropTail(),
    Red(min="20KB", max="60KB", max_p=0.3, weight=0.01, gentle=True, ecn=True, wait=True),
    Ramp(kmin="5pkts", kmax="40pkts", pmax=0.25),
    CoDel(target="2ms", interval="30ms", ecn=True),
    Pie(target="3ms", t_update="20ms", alpha=0.5, beta=2.0, max_burst="1ms", ecn=True),
]


def test_the_docs_page_is_the_declaration():
    assert DOCS.read_text() == parameter_docs.markdown(), (
        "docs/parameters.md is stale: `isthmus parameters --markdown --out docs/parameters.md`"
    )


def test_every_model_is_the_engines_type_field_for_field():
    # Every kind the engine declares has its Python model, with the declared fields.
    for type_name, models in (("AqmConfig", AQMS), ("SchedulerConfig", SCHEDULERS)):
        kinds = {value for value, _ in parameter_docs.choices(declared.DECLARED[type_name])}
        assert kinds == {model.kind for model in models}
        for model in models:
            fields = set(type(model).model_fields) - {"kind"}
            assert fields == set(declared.parameters(type_name, model.kind))


@pytest.mark.parametrize("scheduler", SCHEDULERS, ids=lambda s: s.kind)
@pytest.mark.parametrize("aqm", AQMS, ids=lambda a: a.kind)
def test_what_python_sends_the_engine_takes_and_keeps(scheduler, aqm):
    config = queue_config("300pkts", scheduler, aqm, device_queue=5)
    sim = Simulation(Topology.leaf_spine(1, 2, 2), scheduler=scheduler, aqm=aqm, device_queue=5)
    kinds = sim.topology.nodes()["kind"]
    switch_port = next(i for i, node in enumerate(sim.ports()["node"]) if kinds[node] == "switch")
    held = deserialised(sim._engine.queue_config(switch_port))
    # Python's units converted: times in ps, sizes in bytes, limits as (unit, count).
    assert held["scheduler"] == config["scheduler"]
    assert held["aqm"] == config["aqm"]


def test_units_and_ranges_come_from_the_declaration():
    target = declared.parameters("AqmConfig", "codel")["target"]
    assert (target.unit, target.default, target.range_text()) == ("ps", 5_000_000_000, "> 0")
    assert CoDel().target == "5.000ms" and CoDel().engine()["target"] == 5_000_000_000
    assert Red.model_fields["max_p"].description == "Marking probability reached at `max`."
    with pytest.raises(ValueError, match=r"CoDel: target: must be greater than 0"):
        checked(CoDel, "CoDel", target="0s")
    with pytest.raises(ValueError, match=r"max_p: Input should be less than or equal to 1"):
        checked(Red, "RED", min="1pkts", max="9pkts", max_p=1.5)
    with pytest.raises(ValueError, match=r"mss: must be at most 65495B"):
        checked(TcpParams, "tcp", mss="70000B")
    with pytest.raises(ValueError, match=r"min_rto: 5 has no unit"):
        checked(TcpParams, "tcp", min_rto=5)
    with pytest.raises(ValueError, match=r"classes: Input should be less than or equal to 64"):
        checked(StrictPriority, "scheduler", classes=65)
    with pytest.raises(ValueError, match=r"budgets goes with rank 'deadline', and only with it"):
        checked(Pifo, "scheduler", rank="arrival", budgets=["1us"])
    with pytest.raises(ValueError, match=r"budgets goes with rank 'deadline', and only with it"):
        checked(Pifo, "scheduler", rank="deadline", budgets=[])
    # A dumped model validates again (scenario files are dumped and re-read).
    for model in SCHEDULERS + AQMS + [TcpParams(small_queue_time="1ms")]:
        assert type(model).model_validate(model.model_dump()) == model
    # A bound is said exactly in the engine's unit.
    with pytest.raises(ValueError, match=r"target: must be greater than 0ps"):
        checked(CoDel, "CoDel", target="0s")


def test_tcp_settings_cross_whole_with_the_engines_defaults():
    core = TcpParams(mss="9000B", min_rto="1ms", dctcp_g=0.5).as_core()
    assert (core["mss"], core["min_rto"], core["dctcp"]["g"]) == (9000, 1_000_000_000, 0.5)
    assert core["dctcp"]["initial_alpha"] == declared.parameters("Dctcp")["initial_alpha"].default
    assert TcpParams(small_queue_time="0s").as_core()["small_queue_time"] is None


def test_python_calls_may_give_quantities_in_the_engines_unit():
    sim = Simulation(Topology.leaf_spine(1, 2, 2), bcn={})
    flow = sim.add_bcn_flow(0, 3, fair_share="1Gbps", size="10KB", min_pause=10**9)
    assert flow == 0
    with pytest.raises(ValueError, match=r"min_pause \(900000000000ps\) must not exceed"):
        sim.add_bcn_flow(0, 3, fair_share="1Gbps", size="10KB", min_pause=900 * 10**9)
    with pytest.raises(ValueError, match=r"BCN regulator: gi: Input should be greater than 0"):
        sim.add_bcn_flow(0, 3, fair_share="1Gbps", size="10KB", gi=0.0)
    with pytest.raises(ValueError, match=r"DCQCN: g: Input should be less than or equal to 1"):
        sim.add_dcqcn_flow(0, 3, "10KB", g=2.0)


def test_the_scenario_schema_carries_the_declared_meanings():
    schema = Scenario.model_json_schema()
    tcp = schema["$defs"]["TcpParams"]["properties"]["min_rto"]
    assert tcp["description"] == declared.parameters("TcpConfig")["min_rto"].meaning
    network = schema["$defs"]["Network"]["properties"]
    assert network["pfc"]["description"] == "Priority flow control on every switch ingress."


def test_isthmus_parameters_lists_and_filters():
    shown = CliRunner().invoke(app, ["parameters", "codel"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "interval" in shown.output and "100.000ms" in shown.output
    assert "mss" not in shown.output
    missing = CliRunner().invoke(app, ["parameters", "no-such-thing"])
    assert missing.exit_code != 0
    assert "no parameter's type, kind or name contains 'no-such-thing'" in missing.output


def test_the_engine_publishes_its_declarations_as_json_schema():
    schema = deserialised(_core.declarations())["$defs"]
    assert {"EngineConfig", "QueueConfig", "AqmConfig", "SchedulerConfig"} <= set(schema)
    assert {"TcpConfig", "BcnSourceConfig", "DcqcnConfig"} <= set(schema)
