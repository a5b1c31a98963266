"""HTML reports: the page parses, every plot exists and is embedded, and a headless
browser renders something that is not blank."""

import base64
import shutil
import subprocess
from html.parser import HTMLParser

import matplotlib.image
import pytest
from typer.testing import CliRunner

from isthmus.cli import app

runner = CliRunner()


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.table_cells = 0

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.sources.append(dict(attrs)["src"])
        if tag == "td":
            self.table_cells += 1


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    for name in ("leafspine-udp", "incast-udp"):
        result = runner.invoke(app, ["run", name, "--out", str(root / name)])
        assert result.exit_code == 0, result.output
    out = root / "report"
    result = runner.invoke(
        app, ["report", str(root / "leafspine-udp"), str(root / "incast-udp"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_the_page_parses_and_embeds_every_plot(report):
    page = (report / "report.html").read_text()
    parser = _Images()
    parser.feed(page)
    plots = sorted((report / "plots").glob("*.png"))
    names = [p.name for p in plots]
    assert names == [
        "fct_cdf.png",
        "queue_cdf.png",
        "slowdown.png",
        "timeseries.png",
        "utilization_0.png",
        "utilization_1.png",
    ]
    assert len(parser.sources) == len(plots)
    embedded = {base64.b64decode(s.split(",", 1)[1]) for s in parser.sources}
    assert embedded == {p.read_bytes() for p in plots}
    assert all(data.startswith(b"\x89PNG") for data in embedded)
    # The side-by-side table: one cell per headline per run.
    assert parser.table_cells % 2 == 0 and parser.table_cells >= 20
    assert "leafspine-udp" in page and "incast-udp" in page


def test_a_headless_browser_renders_a_non_blank_page(report, tmp_path):
    browser = next(
        (
            shutil.which(b)
            for b in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(b)
        ),
        None,
    )
    if browser is None:
        pytest.fail("no headless browser: install Chromium (apt-get install chromium)")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
            "--window-size=1400,2400", f"--screenshot={shot}", (report / "report.html").as_uri(),
        ],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[1] == 1400
    # A blank page is one flat colour; plots and text give many distinct values.
    assert pixels.std() > 0.05
    assert len({tuple(p) for p in pixels.reshape(-1, 3)[::97].round(2)}) > 50
    # The interactive plots (the page's first plots) drew: their band below the tables
    # is not blank either.
    band = pixels[900:2000]
    assert band.std() > 0.05


def test_the_interactive_plots_name_ports_and_embed_plotly_once(report):
    from plotly.offline import get_plotlyjs

    page = (report / "report.html").read_text()
    assert page.count(get_plotlyjs()[:2000]) == 1, "Plotly's library, once"
    assert page.index("Interactive plots") < page.index("Static plots")
    # Hover names each switch egress port by switch and peer.
    assert "utilization %{z:.2f}" in page
    assert "leaf0-\\u003e" in page, "ports named switch->peer (JSON escapes the >)"
    assert page.count('class="plot"') == 2 + 2  # time series, scatter, a heat map per run


def test_a_folder_that_is_not_a_run_is_one_clear_error(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "not a run folder" in result.output


def test_a_sweep_folder_is_reported_by_swept_value_across_seeds(tmp_path):
    import textwrap

    scenario = tmp_path / "s.toml"
    scenario.write_text(
        textwrap.dedent(
            """
            name = "sw"
            [topology]
            kind = "leaf_spine"
            spines = 1
            leaves = 2
            hosts_per_leaf = 2
            [[traffic]]
            kind = "poisson_flows"
            load = 0.2
            stop = "1ms"
            [run]
            duration = "50ms"
            stop_when = "flows_finished"
            """
        )
    )
    sweep = tmp_path / "sweep"
    args = ["sweep", str(scenario), "--set", "load=0.2,0.6", "--seeds", "2", "--out", str(sweep)]
    assert runner.invoke(app, [*args, "--workers", "1"]).exit_code == 0
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(sweep), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert "By swept value" in page
    assert "sweep: load=0.2 (n = 2)" in page and "load=0.6 (n = 2)" in page
    assert " ± " in page
