"""The ACC premise sweep: static ECN thresholds for DCQCN on one bottleneck (physics of
each point), and its jobs, rows and claim."""

import pytest

from isthmus.experiments import Results
from isthmus.experiments.jobs import check_jobs
from isthmus.studies.acc.premise import (
    premise_claim,
    premise_jobs,
    premise_rows,
    premise_variant,
    run_premise,
)

PAYLOAD_SHARE = 1000 / 1040
"""DCQCN's 1000 B payloads in 1040 B packets: the most of a link the receiver can get."""


def test_a_lone_flow_without_marking_fills_the_link():
    r = run_premise(1, 25, 1, None, 4.0)
    assert r["utilisation"] == pytest.approx(1.0, abs=0.005)
    assert r["goodput_fraction"] == pytest.approx(PAYLOAD_SHARE, abs=0.005)
    assert r["marks"] == 0


@pytest.mark.parametrize("kmin", [1, 5, 160])
def test_no_point_exceeds_its_link(kmin):
    r = run_premise(2, 25, 8, kmin, 10.0)
    assert 0 < r["utilisation"] <= 1.0 + 1e-9
    assert 0 < r["goodput_fraction"] <= PAYLOAD_SHARE + 1e-9
    assert r["queue_kb_p99"] >= r["queue_kb_mean"] >= 0


def test_a_higher_kmin_holds_a_longer_queue():
    low, high = (run_premise(1, 25, 2, kmin, 40.0) for kmin in (5, 160))
    assert high["queue_kb_mean"] > 5 * low["queue_kb_mean"]
    assert high["marks"] > 0 and low["marks"] > 0


def test_a_threshold_under_two_packets_costs_throughput_at_100g():
    """The one place the premise holds here: Kmin 1 KB (a ramp over 1-4 KB) marks the
    collisions of eight senders' packets, and holds the link far below full; 40 KB
    fills it (steady state, after the start)."""
    sub_packet, deep = (run_premise(1, 100, 8, kmin, 60.0) for kmin in (1, 40))
    assert sub_packet["utilisation"] < 0.6
    assert deep["utilisation"] > 0.98


SETTINGS = {
    "premise_ms": 10.0,
    "premise_rates": (25, 100),
    "premise_kmin_kb": (1, 40),
    "premise_senders": (2, 8),
}


def test_every_sweep_point_is_one_job_a_seed():
    jobs = premise_jobs(SETTINGS, [1, 2])
    assert len(jobs) == 2 * 2 * 2 * 2
    check_jobs(jobs)
    assert {j.variant for j in jobs} == {
        premise_variant(r, n, k) for r in (25, 100) for n in (2, 8) for k in (1, 40)
    }


def _results(utilisation: dict[tuple[float, int, float, int], float]) -> Results:
    records = [
        {
            "experiment": "premise",
            "variant": premise_variant(rate, senders, kmin),
            "scheme": "DCQCN static ECN",
            "seed": seed,
            "result": {
                "seed": seed,
                "rate_gbps": rate,
                "senders": senders,
                "kmin_kb": kmin,
                "utilisation": u,
                "queue_kb_mean": kmin,
                "queue_kb_p99": 2 * kmin,
            },
        }
        for (rate, senders, kmin, seed), u in utilisation.items()
    ]
    seeds = sorted({seed for *_, seed in utilisation})
    return Results("acc", True, seeds, SETTINGS, records)


def test_one_seed_gives_rows_but_no_verdict():
    results = _results({(100, 8, 1, 1): 0.4, (100, 8, 40, 1): 1.0})
    rows = premise_rows(results)
    assert len(rows) == 2 and all(len(row) == 5 for row in rows)
    assert rows[0][1] == "40.0" and rows[0][4] == "1"
    claim = premise_claim(results)
    assert claim.holds is None and "no verdict" in claim.evidence


def test_the_claim_weighs_the_lowest_kmin_against_the_best():
    costly = {(100, 8, 1, s): 0.4 + 0.01 * s for s in (1, 2, 3)}
    costly |= {(100, 8, 40, s): 1.0 - 0.001 * s for s in (1, 2, 3)}
    assert premise_claim(_results(costly)).holds is True
    free = {(100, 8, k, s): 0.99 + 0.001 * s for k in (1, 40) for s in (1, 2, 3)}
    assert premise_claim(_results(free)).holds is False
    # The rate asked for, not the highest.
    both = costly | {(25, 8, k, s): 0.99 + 0.001 * s for k in (1, 40) for s in (1, 2, 3)}
    assert premise_claim(_results(both), 25).holds is False
    assert "25 Gb/s" in premise_claim(_results(both), 25).statement
