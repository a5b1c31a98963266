"""The no-silver-bullet study holds its claims, and studies are found by discovery."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from isthmus import studies
from isthmus.cli import app
from isthmus.experiments import run_study
from isthmus.studies import nosilverbullet as nsb


def test_each_pair_is_decided_by_the_workload_and_link(tmp_path):
    """The six pairwise experiments (quick): deep buffers win a lone flow's bulk
    throughput on LTE and CoDel its interactive score (3a / 3b), and CoDel+FQ beats
    Bufferbloat+FQ for two interactive flows on the fixed link (2b)."""
    results = run_study(nsb, quick=True, seeds=[1], folder=tmp_path / "s")
    won = nsb.verdicts(results)
    assert won[("3a", "bulk")] == "drop-tail"
    assert won[("3b", "interactive")] == "CoDel"
    assert won[("2b", "interactive")] == "CoDel+FQ"
    assert len(results.distinct("seed", experiment="1b")) == nsb.QUICK["seeds"]["1b"]
    assert all(results.values("pages_s", experiment="1b")), "every 1b run completes web pages"


def test_the_pooled_tail_takes_index_floor_0999_n():
    pages = [[float(i) for i in range(1000)], [float(i) for i in range(1000, 2000)]]
    # 2,000 values: index floor(1998.0) = 1998.
    assert nsb.pooled_tail(pages) == 1998.0
    assert np.isnan(nsb.pooled_tail([[]]))


def test_studies_are_discovered_and_each_exposes_the_interface():
    found = studies.available()
    assert {"nosilverbullet", "ofpt", "ibcn", "diolkos", "acc"} <= set(found)
    for name, module in found.items():
        assert name == module.NAME and module.TITLE
        assert callable(module.jobs) and callable(module.table)
    with pytest.raises(
        ValueError,
        match="unknown study 'silver'; .*known: acc, arena, diolkos, ibcn, nosilverbullet, ofpt",
    ):
        studies.study("silver")


def test_reproduce_prints_the_table_and_claims_and_writes_json(tmp_path):
    out = tmp_path / "nsb.json"
    result = CliRunner().invoke(
        app,
        [
            "reproduce",
            "nosilverbullet",
            "--quick",
            "--json",
            str(out),
            "--out",
            str(tmp_path / "s"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "No silver bullet" in result.output
    data = json.loads(out.read_text())
    assert data["study"] == "nosilverbullet" and data["quick"] is True
    assert data["columns"][0] == "experiment link objective | configuration"
    rows = {row[0]: row for row in data["rows"]}
    assert rows["1b fixed bulk | CoDel+FQ"][2] == "11.2"
    assert rows["1b fixed web | CoDel+FCFS"][2] == "43"
    assert data["claims"][-1]["statement"].startswith("No silver bullet")
    missing = CliRunner().invoke(app, ["reproduce", "silver"])
    assert (
        missing.exit_code == 2
        and "known: acc, arena, diolkos, ibcn, nosilverbullet, ofpt" in missing.output
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
    from isthmus.studies import Claim

    claim = Claim("A beats B", np.float64(2.0) > np.float64(1.0), "2 > 1")
    assert type(claim.holds) is bool
    assert json.loads(json.dumps(claim.__dict__))["holds"] is True


@pytest.mark.parametrize("name", ["acc", "arena", "diolkos", "ibcn", "nosilverbullet", "ofpt"])
def test_every_study_declares_its_departures_in_code_and_in_its_docs(name):
    """A verdict rests on the paper's setup: each study lists how its setup differs,
    and its docs carry the same table."""
    from isthmus.studies import departures_markdown

    module = studies.study(name)
    assert len(module.DEPARTURES) >= 1
    doc = (Path(__file__).parents[1] / "docs" / f"{name}.md").read_text()
    assert departures_markdown(module.DEPARTURES) in doc, (
        f"docs/{name}.md lacks the departures table its module declares; paste "
        "isthmus.studies.departures_markdown(module.DEPARTURES)"
    )


def test_a_departure_names_its_aspect_and_says_what_and_why():
    from isthmus.studies import Departure

    with pytest.raises(ValueError, match="aspect is one of"):
        Departure("colour", "a", "b", "c")
    with pytest.raises(ValueError, match="says why"):
        Departure("topology", "a", "b", " ")
