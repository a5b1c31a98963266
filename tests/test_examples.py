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
