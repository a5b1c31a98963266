"""The experiment framework: the same results however jobs run, a stored job per file,
resumption after a kill, refused verdicts under two seeds, provenance."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import experiment_jobs as toy
import pytest
from typer.testing import CliRunner

from isthmus import studies
from isthmus.cli import app
from isthmus.experiments import Job, StudyFailed, load_study, run_study
from isthmus.experiments.folder import JOBS, MANIFEST, job_file
from isthmus.experiments.jobs import execute
from isthmus.experiments.verdicts import better, better_pooled, cell, exceeds, over_seeds, within
from isthmus.registry import Registry

runner = CliRunner()
CONSOLE = Path(sys.executable).parent / "isthmus"


def _table(results) -> dict:
    return toy.table(results).as_dict()


def test_the_same_table_here_and_on_two_workers(tmp_path):
    here = run_study(toy, quick=True, seeds=[1, 2, 3], folder=tmp_path / "here", workers=0)
    two = run_study(toy, quick=True, seeds=[1, 2, 3], folder=tmp_path / "two", workers=2)
    assert _table(here) == _table(two)
    assert [r["name"] for r in here.records] == [j.name for j in toy.jobs(here.settings, [1, 2, 3])]
    # Two workers did run them: two processes, neither this one.
    pids = {r["pid"] for r in two.select(experiment="draws")}
    assert len(pids) == 2 and os.getpid() not in pids
    # A job that needs another got that job's stored result.
    for seed in (1, 2, 3):
        (parts,) = here.values("mean", experiment="draws", scheme="fast", seed=seed)
        assert here.values("total", experiment="totals", seed=seed) == [parts * 10]


def test_a_job_that_fails_or_dies_is_reported_and_the_rest_go_on():
    planned = [
        Job("x", "fails", 1, toy.fail, {"seed": 1}),
        Job("x", "dies", 1, toy.die, {"seed": 1}),
        Job("x", "fast", 1, toy.draw, {"scheme": "fast", "seed": 1, "draws": 5, "sleep_s": 0}),
        Job("y", "fast", 1, toy.total, {"seed": 1}, needs={"parts": "x | dies | seed 1"}),
    ]
    ends = {end.job.name: end for end in execute(planned, workers=2)}
    assert ends["x | fails | seed 1"].error == "RuntimeError: job for seed 1 broke"
    assert "toy.fail" not in ends["x | fails | seed 1"].error
    assert "in fail" in ends["x | fails | seed 1"].detail  # the traceback, for the record
    assert ends["x | dies | seed 1"].error == "its worker process died (signal SIGKILL)"
    assert ends["y | fast | seed 1"].error == "not run: it needs 'x | dies | seed 1', which failed"
    assert ends["x | fast | seed 1"].error is None and ends["x | fast | seed 1"].result["mean"] > 0


def test_a_study_with_failed_jobs_keeps_the_others_and_names_the_failures(tmp_path, monkeypatch):
    # Every draw fails; the totals, which need them, are not run.
    monkeypatch.setattr(toy, "draw", lambda **given: toy.fail(given["seed"]))
    with pytest.raises(StudyFailed) as failed:
        run_study(toy, quick=True, seeds=[1, 2], folder=tmp_path / "s")
    assert len(failed.value.failed) == 6
    recorded = json.loads((tmp_path / "s" / "failures.json").read_text())
    assert recorded["draws | fast | seed 1"]["error"] == "RuntimeError: job for seed 1 broke"
    assert "--resume" in str(failed.value)


def test_threshold_and_over_seeds_claims_are_judged_on_intervals_and_refused_on_one_seed():
    """A threshold is judged by the interval of the mean, not the mean: 0.975 on average
    over seeds that straddle 0.97 is not "above 97 %"; one seed gives no verdict."""
    assert exceeds("above", [0.98], 0.97).holds is None
    assert exceeds("above", [0.98, 0.985, 0.99], 0.97).holds is True
    straddling = exceeds("above", [0.965, 0.985], 0.97, scale=100, unit=" %")
    assert straddling.holds is False and "against 97.0 % over 2 seeds" in straddling.evidence
    assert within("near", [-0.001, 0.002, 0.0005], 0.01, "a − b").holds is True
    assert within("near", [-0.05, -0.04], 0.01, "a − b").holds is False
    assert within("near", [0.0], 0.01, "a − b").holds is None
    assert over_seeds("none lost", True, "0 lost", seeds=1).holds is None
    assert over_seeds("none lost", False, "3 lost", seeds=5).holds is False


def test_a_refused_claim_under_two_seeds():
    one = better("a beats b", [1.0], [2.0, 2.5], lower_is_better=True)
    assert one.holds is None and one.verdict == "no verdict"
    assert "needs 2 or more" in one.evidence
    two = better("a beats b", [1.0, 1.1], [2.0, 2.1], lower_is_better=True)
    assert two.holds is True and "95 % interval [-1.3" in two.evidence
    # An interval that straddles zero is no win, either way round.
    assert better("x", [1.0, 3.0], [2.0, 2.1], lower_is_better=True).holds is False
    assert better("x", [1.0, 1.1], [2.0, 2.1], lower_is_better=False).holds is False
    pooled = better_pooled("p", [[1.0, 2.0]], [[3.0], [4.0]], max, lower_is_better=True)
    assert pooled.holds is None
    pooled = better_pooled(
        "p",
        [[1.0, 2.0], [1.5]],
        [[3.0], [4.0, 5.0]],
        lambda s: max(map(max, s)),
        lower_is_better=True,
    )
    assert pooled.holds is True
    # A cell shows no interval for one value, never "± 0.0".
    assert cell([2.0]) == "2.0" and cell([1.0, 3.0]).startswith("2.0 ± 12.")
    assert cell([float("nan")]) == "n/a"


def test_the_cli_prints_no_verdict_for_one_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(studies, "available", lambda: Registry("study", {"toy": toy}))
    result = runner.invoke(
        app, ["reproduce", "toy", "--quick", "--jobs", "1", "--out", str(tmp_path / "s")]
    )
    assert result.exit_code == 0, result.output
    assert "fast is faster than slow: no verdict" in " ".join(result.output.split())
    assert "3 jobs ran, 0 kept from before" in result.output


def test_a_resumed_run_reruns_only_the_missing_jobs(tmp_path):
    folder = tmp_path / "s"
    first = run_study(toy, quick=True, seeds=[1, 2], folder=folder)
    kept = job_file(folder, toy.jobs(first.settings, [1, 2])[1])
    lost = job_file(folder, toy.jobs(first.settings, [1, 2])[0])
    lost.unlink()
    before = kept.read_bytes()
    again = run_study(toy, quick=True, seeds=[1, 2], folder=folder, resume=True)
    assert again.reused == 5 and lost.exists()
    assert kept.read_bytes() == before  # not rerun: the very same file
    assert _table(again) == _table(first)
    # Without --resume the run starts over.
    fresh = run_study(toy, quick=True, seeds=[1, 2], folder=folder)
    assert fresh.reused == 0
    # Other settings are refused, not mixed in.
    with pytest.raises(ValueError, match="other quick"):
        run_study(toy, quick=False, seeds=[1, 2], folder=folder, resume=True)


def test_a_sigkilled_study_leaves_only_finished_jobs_and_resumes(tmp_path, monkeypatch):
    """The console script, killed outright mid-run: every stored file is whole JSON, and
    --resume runs only the jobs that had not finished."""
    folder = tmp_path / "s"
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import experiment_jobs as toy\n"
        "from isthmus.experiments import run_study\n"
        "from pathlib import Path\n"
        "if __name__ == '__main__':\n"
        "    toy.QUICK['sleep_s'] = 0.4\n"
        "    toy.QUICK['draws'] = 20\n"
        "    run_study(toy, quick=True, seeds=list(range(1, 9)), folder=Path(sys.argv[1]), workers=2, resume='--resume' in sys.argv)\n"
    )
    run = subprocess.Popen([sys.executable, str(script), str(folder)], start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list((folder / JOBS).glob("*.json"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    stored = sorted((folder / JOBS).glob("*.json"))
    assert 4 <= len(stored) < 24
    for path in stored:
        assert "result" in json.loads(path.read_text())
    stamps = {p.name: p.read_bytes() for p in stored}
    resumed = subprocess.run([sys.executable, str(script), str(folder), "--resume"], timeout=120)
    assert resumed.returncode == 0
    after = sorted((folder / JOBS).glob("*.json"))
    assert len(after) == 24
    assert all(p.read_bytes() == stamps[p.name] for p in after if p.name in stamps)
    assert not list((folder / JOBS).glob(".*"))  # no temporary file left


def test_the_folder_records_its_provenance_and_renders_without_running(tmp_path):
    folder = tmp_path / "s"
    results = run_study(toy, quick=True, seeds=[1, 2], folder=folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["study"] == "toy" and manifest["seeds"] == [1, 2] and manifest["quick"]
    assert manifest["settings"] == {**toy.QUICK}
    assert manifest["isthmus"] and "commit" in manifest and manifest["python"]
    assert [j["name"] for j in manifest["jobs"]] == [r["name"] for r in results.records]
    assert all(j["wall_s"] >= 0 for j in manifest["jobs"])
    assert _table(load_study(folder, toy)) == _table(results)
    job_file(folder, toy.jobs(results.settings, [1, 2])[3]).unlink()
    with pytest.raises(ValueError, match=r"lacks 1 of 6 jobs .*--resume"):
        load_study(folder, toy)


def test_bad_study_folders_are_refused_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(studies, "available", lambda: Registry("study", {"toy": toy}))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["reproduce", "toy", "--quick", "--out", str(other)])
    assert result.exit_code != 0
    assert "is not empty and is not a study folder" in result.output
    assert (other / "notes.txt").read_text() == "mine"
    result = runner.invoke(app, ["reproduce", "toy", "--from", str(other)])
    assert "is not a study folder" in result.output and result.exit_code != 0
    result = runner.invoke(app, ["reproduce", "toy", "--from", str(other), "--resume"])
    assert "--from runs nothing: leave out --resume" in result.output


def test_two_jobs_of_one_name_are_refused():
    twice = [Job("x", "a", 1, toy.fail, {"seed": 1}), Job("x", "a", 1, toy.fail, {"seed": 1})]
    with pytest.raises(ValueError, match="two jobs are named 'x | a | seed 1'"):
        list(execute(twice))
    orphan = [Job("x", "a", 1, toy.total, {"seed": 1}, needs={"parts": "nothing"})]
    with pytest.raises(ValueError, match="needs 'nothing'"):
        list(execute(orphan))


def test_a_study_gives_the_same_table_on_one_worker_two_and_ray(tmp_path):
    """`isthmus reproduce` as users run it: one worker, two, and a Ray instance on this
    machine give the same table, claims and notes."""
    shown = []
    for how in (["--jobs", "1"], ["--jobs", "2"], ["--ray", "auto"]):
        out, json_out = tmp_path / how[1], tmp_path / f"{how[1]}.json"
        command = [str(CONSOLE), "reproduce", "nosilverbullet", "--quick", "--seeds", "2"]
        command += [*how, "--out", str(out), "--json", str(json_out)]
        run = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert "Started a local Ray instance" not in run.stdout + run.stderr
        document = json.loads(json_out.read_text())
        shown.append({key: document[key] for key in ("rows", "claims", "notes")})
        assert len(list((out / JOBS).glob("*.json"))) == len(document["results"])
    assert shown[0] == shown[1] == shown[2]
    # --from prints it again without running a job.
    again = subprocess.run(
        [str(CONSOLE), "reproduce", "nosilverbullet", "--from", str(tmp_path / "2")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0 and "jobs ran" not in again.stdout
    assert shown[0]["rows"][0][0] in again.stdout


def test_a_ray_address_nothing_answers_at_is_refused_at_once():
    pytest.importorskip("ray")
    import socket

    with socket.socket() as probe:  # a port just freed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    planned = [Job("x", "a", 1, toy.total, {"seed": 1, "parts": {"mean": 1.0}})]
    started = time.monotonic()
    with pytest.raises(ValueError, match=rf"--ray 127.0.0.1:{port}: nothing answers there"):
        list(execute(planned, ray_address=f"127.0.0.1:{port}"))
    assert time.monotonic() - started < 30  # Ray's own client retries for minutes
    with pytest.raises(ValueError, match="is not HOST:PORT"):
        list(execute(planned, ray_address="nonsense"))
