"""What Diolkos costs the control plane: one decision round's forecasts for every switch
of the paper mesh, and a short study-1b run under L2 learning and under Dense.

    python benches/diolkos_round.py

1. Nine switches, each with its own fitted Dense net over its own ports (the paper
   mesh's port counts): the median wall time of a round forecast model by model
   (predict()) and as NeuralForecaster.predict_many (one batched product per layer for
   the nets of one shape), over 200 rounds.
2. Study 1b (100 -> 200 -> 100 flows/s on the mesh), 100 s gathering then 60 s
   measured, under L2 learning and under Dense: wall seconds and events.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from isthmus.predict import Dense
from isthmus.predict.neural import NeuralForecaster
from isthmus.studies import diolkos

MESH_PORTS = [5, 2, 5, 2, 5, 2, 4, 2, 4]  # s1, then each Tofino's a and b halves


def forecast_round(rounds: int = 200) -> dict[str, float]:
    rng = np.random.default_rng(0)
    models = [
        Dense(window=5, smoothing=75, epochs=3, seed=i).fit(rng.random((300, ports)))
        for i, ports in enumerate(MESH_PORTS)
    ]
    for model in models:
        model.update(rng.random((80, model.variables)))
    NeuralForecaster.predict_many(models)  # warm up torch

    def median_ms(step) -> float:
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            step()
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1e3

    return {
        "one by one": median_ms(lambda: [m.predict() for m in models]),
        "batched": median_ms(lambda: NeuralForecaster.predict_many(models)),
    }


def main() -> None:
    for how, ms in forecast_round().items():
        print(f"forecast round, 9 switches, {how}: {ms:.3f} ms (median of 200)")
    for scheme in ("base", "dense"):
        result = diolkos.paper_run("1b", scheme, 1, 100.0, 60.0)
        print(f"study 1b, 160 s, {scheme}: {result['wall_s']:.1f} s wall, {result['flows']} flows")


if __name__ == "__main__":
    main()
