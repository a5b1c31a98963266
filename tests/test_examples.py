"""The examples are executable documentation: they must still show what they say."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_least_loaded_spine_evens_out_the_spines_and_lowers_fct():
    example = load("least_loaded_spine")
    ecmp, ecmp_fct = example.run(with_app=False)
    app, app_fct = example.run(with_app=True)
    assert max(app) - min(app) < max(ecmp) - min(ecmp)
    assert app_fct < ecmp_fct
    assert abs(sum(app) - sum(ecmp)) / sum(ecmp) < 0.05


def test_every_python_block_of_the_readme_runs_as_printed(tmp_path, monkeypatch):
    import re

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i}", "exec"), {"__name__": "readme"})


def test_the_baseline_apps_show_what_the_example_says():
    example = load("baselines")
    single, _ = example.fabric_goodput("single_path")
    ecmp, _ = example.fabric_goodput("ecmp")
    hedera, _ = example.fabric_goodput("hedera")
    assert max(single, ecmp) < 11 and hedera > 13.5, (single, ecmp, hedera)
    ring = example.learning_ring()
    assert ring["finished"] and ring["loops"] == 0 and 0 < ring["packet_ins"] < 200


def test_the_tutorials_python_runs_and_its_scenario_file_parses(tmp_path, monkeypatch):
    import re

    from isthmus.scenario import parse_scenario

    tutorial = (Path(__file__).parent.parent / "docs" / "tutorial.md").read_text()
    for text in re.findall(r"```toml\n(.*?)```", tutorial, re.S):
        parse_scenario(text)
    blocks = re.findall(r"```python\n(.*?)```", tutorial, re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/tutorial.md python block {i}", "exec"), {"__name__": "tutorial"})


def test_the_readmes_scenario_files_parse_and_the_minimal_one_runs(tmp_path):
    import re

    from isthmus.scenario import parse_scenario
    from isthmus.units import time_ps

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.S)
    first = parse_scenario(blocks[0])
    assert first.name == "first"
    sim = first.build()
    assert sim.run(time_ps(first.run.duration), stop_when_flows_finish=True)
    assert sim.flows()["bytes_delivered"].sum() > 0
    parse_scenario(blocks[1])  # the every-key reference is valid as written
