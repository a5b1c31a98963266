"""The no-silver-bullet study holds its claims, and studies are found by discovery."""

import json

import pytest
from typer.testing import CliRunner

from isthmus import studies
from isthmus.cli import app
from isthmus.studies import nosilverbullet as nsb


def test_no_configuration_wins_every_objective():
    results = nsb.mean_results(nsb.run(quick=True, seeds=[1]))
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


def test_studies_are_discovered_and_each_exposes_the_interface():
    found = studies.available()
    assert {"nosilverbullet", "ofpt", "ibcn", "diolkos", "acc"} <= set(found)
    for name, module in found.items():
        assert name == module.NAME and module.TITLE
        assert callable(module.run) and callable(module.table)
    with pytest.raises(
        ValueError,
        match="unknown study 'silver'; available: acc, diolkos, ibcn, nosilverbullet, ofpt",
    ):
        studies.study("silver")


def test_reproduce_prints_the_table_and_claims_and_writes_json(tmp_path):
    out = tmp_path / "nsb.json"
    result = CliRunner().invoke(app, ["reproduce", "nosilverbullet", "--quick", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "No silver bullet" in result.output
    assert "No configuration wins every objective: holds" in result.output
    data = json.loads(out.read_text())
    assert data["study"] == "nosilverbullet" and data["quick"] is True
    assert data["columns"][0] == "configuration"
    assert [row[0] for row in data["rows"]] == list(nsb.CONFIGURATIONS)
    assert data["claims"][0]["holds"] is True
    assert set(data["results"]["per_seed"]["1"]) == set(nsb.CONFIGURATIONS)
    missing = CliRunner().invoke(app, ["reproduce", "silver"])
    assert (
        missing.exit_code == 2
        and "available: acc, diolkos, ibcn, nosilverbullet, ofpt" in missing.output
    )
    no_figures = CliRunner().invoke(app, ["reproduce", "nosilverbullet", "--figures", "x"])
    assert no_figures.exit_code != 0
    assert "study nosilverbullet draws no figures" in no_figures.output
    listed = CliRunner().invoke(app, ["studies"])
    assert listed.exit_code == 0 and "nosilverbullet" in listed.output


def test_a_study_table_renders_as_html_in_notebooks():
    from isthmus.studies import Claim, StudyTable

    table = StudyTable(
        title="t <1>",
        columns=["scheme", "x"],
        rows=[["a&b", "1"]],
        claims=[Claim("A beats B", True, "1 > 0")],
        notes=["n"],
    )
    html = table._repr_html_()
    assert "<th>scheme</th>" in html and "<td>a&amp;b</td>" in html
    assert "t &lt;1&gt;" in html and "<b>holds</b>: A beats B" in html


def test_a_claim_judged_on_numpy_figures_holds_a_plain_boolean():
    import numpy as np

    from isthmus.studies import Claim

    claim = Claim("A beats B", np.float64(2.0) > np.float64(1.0), "2 > 1")
    assert type(claim.holds) is bool
    assert json.loads(json.dumps(claim.__dict__))["holds"] is True
