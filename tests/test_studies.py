"""The no-silver-bullet study holds its claims: no one configuration wins everything."""

import json

from typer.testing import CliRunner

from isthmus.cli import app
from isthmus.studies import nosilverbullet as nsb


def test_no_configuration_wins_every_objective():
    results = nsb.run(seconds=60)
    paper_three = list(nsb.CONFIGURATIONS)[:3]
    best = nsb.winners(results, paper_three)
    assert len(set(best.values())) > 1, best
    # Deep per-flow buffers keep the variable LTE link busiest for bulk transfers ...
    bw = {c: results[c]["bulk+web"]["bulk"] for c in paper_three}
    assert max(bw, key=bw.get) == "Bufferbloat+FQ"
    # ... and hurt the delay-sensitive stream the most when it shares the link with bulk.
    power = {c: results[c]["bulk+interactive"]["interactive"] for c in paper_three}
    assert min(power, key=power.get) == "Bufferbloat+FQ"
    assert max(power, key=power.get).startswith("CoDel")


def test_reproduce_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "nsb.json"
    result = CliRunner().invoke(
        app, ["reproduce", "nosilverbullet", "--seconds", "20", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "No silver bullet" in result.output and "Wins:" in result.output
    data = json.loads(out.read_text())
    assert set(data) == set(nsb.CONFIGURATIONS)
    assert CliRunner().invoke(app, ["reproduce", "silver"]).exit_code == 2
