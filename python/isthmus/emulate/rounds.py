"""Barrier-synchronised incast rounds (`kind = "incast"`) as real traffic: in each round
every sender sends one response of `size` to the receiver, and the next round starts
`gap` after the last response of the round before it arrived, as the simulator runs them
(crates/isthmus-core/src/rounds.rs).

The simulation built from the scenario holds the first round's flows; the later rounds'
are added here, one flow per sender per round, with ids after every other flow, block
by block, and ports as the engine gives them (source port 1024 + id, the first round's
destination port). (The engine numbers a round's flows as the round starts, so with two
incast blocks its ids interleave the blocks' rounds where these do not.) Their senders
wait, connected to nothing, until the emulation tells them when to start: the
receiver's runner reports each response's last byte, and once a round's last one is in,
every sender of the next round is told to start `gap` after it (all at that moment, on
the hosts' common clock). That request travels through the emulation's own pipes, not
across the emulated network, and takes about a millisecond here: a gap shorter than
that starts late; in the simulator the request takes no time at all. A round that falls
due after the run has ended does not start."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isthmus import units
from isthmus.scenario import IncastTraffic, Scenario, ScenarioError
from isthmus.simulation import Simulation

FIRST_SOURCE_PORT = 1024
PORT_SPAN = 64_000
"""A TCP flow's source port is 1024 + its id modulo this, as the engine numbers them
(`Engine::add_tcp_flow`)."""
NOT_YET = -1
"""The start of a flow of a later round: when its round is due."""


@dataclass
class RoundJob:
    """One incast block: its flows round by round (flow ids) and the gap between."""

    gap_ns: int
    rounds: list[list[int]]
    current: int = 0
    outstanding: set[int] = field(default_factory=set)


class Rounds:
    """The rounds of every incast block: which flows each round holds, and which round
    each job is in."""

    def __init__(self, jobs: list[RoundJob]):
        self.jobs = jobs
        self._job_of = {flow: job for job in jobs for flow in job.rounds[0]}
        for job in jobs:
            job.outstanding = set(job.rounds[0])

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def finished(self, flow: int, time_ns: int) -> tuple[list[int], int]:
        """Flow `flow`'s last byte arrived at `time_ns`. If it was its round's last, the
        flows of the next round and when they start (`gap` later); else no flows."""
        job = self._job_of.pop(flow, None)
        if job is None:
            return [], time_ns
        job.outstanding.discard(flow)
        if job.outstanding or job.current + 1 >= len(job.rounds):
            return [], time_ns
        job.current += 1
        following = job.rounds[job.current]
        job.outstanding = set(following)
        self._job_of.update(dict.fromkeys(following, job))
        return following, time_ns + job.gap_ns


def plan_rounds(spec: Scenario, sim: Simulation) -> tuple[dict[str, np.ndarray], Rounds]:
    """The flow table with every incast block's later rounds added (their `start_ps`
    `NOT_YET`), and the rounds to run."""
    flows = {key: np.array(values) for key, values in sim.flows().items()}
    taken = np.zeros(len(flows["src"]), dtype=bool)
    added: dict[str, list] = {key: [] for key in flows}
    jobs = []
    next_id = len(flows["src"])
    for index, block in enumerate(spec.traffic):
        if not isinstance(block, IncastTraffic):
            continue
        senders = block.senders_for(sim, index)
        size, start = units.size_bytes(block.size), units.time_ps(block.start)
        first = []
        for sender in senders:
            candidates = np.flatnonzero(
                ~taken
                & (flows["src"] == sender)
                & (flows["dst"] == block.receiver)
                & (flows["size_bytes"] == size)
                & (flows["start_ps"] == start)
            )
            if not len(candidates):
                raise ScenarioError(
                    f"traffic[{index}]: the first round's flow from host {sender} is not "
                    "among the simulation's flows"
                )
            taken[candidates[0]] = True
            first.append(int(candidates[0]))
        rounds = [first]
        for _ in range(block.rounds - 1):
            ids = list(range(next_id, next_id + len(senders)))
            next_id += len(senders)
            rounds.append(ids)
            for flow, same_sender in zip(ids, first, strict=True):
                # The first round's flow from the same sender, as the engine has it
                # before it starts (one subflow, nothing delivered), but for its port
                # and start.
                row = {key: flows[key][same_sender] for key in flows}
                row["src_port"] = FIRST_SOURCE_PORT + flow % PORT_SPAN
                row["start_ps"] = NOT_YET
                for key, column in added.items():
                    column.append(row[key])
        jobs.append(RoundJob(units.time_ps(block.gap) // 1000, rounds))
    extended = {
        key: np.concatenate([flows[key], np.array(added[key], dtype=flows[key].dtype)])
        for key in flows
    }
    return extended, Rounds(jobs)
