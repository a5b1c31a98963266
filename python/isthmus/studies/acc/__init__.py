"""ACC (Yan et al., "ACC: Automatic ECN Tuning for High-Speed Datacenter Networks",
SIGCOMM 2021): per-switch multi-agent Double DQN tuning ECN, against the two static
settings DCQCN deployments use.

    spine0        spine1          2 x 100 Gb/s from every leaf to every spine
    leaf0 leaf1 leaf2 leaf3       (4 uplinks per leaf)
    6 servers per leaf at 25 Gb/s (h0-h23)

1. The network: the testbed's two-tier Clos, 1 us links; each switch a 12 MB shared
   buffer (dynamic threshold, alpha 1); PFC on the RDMA class with Xoff at 1/8 of the
   free buffer (at most 1 MB, resume at 80 % of it); DCQCN senders (g = 1/256) whose
   NICs serve their queue pairs round robin.
2. Schemes: SECN1 (Kmin 5 KB, Kmax 200 KB, Pmax 1 %: the DCQCN paper), SECN2 (Kmin
   100 KB, Kmax 400 KB scaled by link rate / 25 Gb/s, Pmax 20 %: the production
   profile), and ACC (`isthmus.control.apps.acc`: an agent per switch, a learner per
   egress queue, 1 ms control interval).
3. ACC's learners are pre-trained offline on incast mixes (each episode: p senders in
   [2, 23], q flows in [1, 1000], sizes log-uniform in 10 KB-10 MB, offered load 10-90 %
   of the receiver's link) in a job of their own per seed, whose result (stored as
   JSON) holds the models; ACC's evaluation jobs load that seed's and go on learning
   online (epsilon at its floor) on traffic they were not trained on:
   a. Heterogeneous traffic whose mix changes every phase (the paper: every 100 s;
      here every 20 ms): web search at 40 % load, data mining at 70 %, then 8-to-1
      incast bursts of 500 KB; all-to-all random pairs. Measured: the mean switch queue
      and fabric utilisation over time, and the phases' goodput.
   b. Two senders to one receiver, messages of 1 KB, 10 KB, 100 KB, 1 MB and 10 MB in
      equal numbers, Poisson arrivals at 20 % and 60 % of the receiver's link: mean, p99
      and p99.9 completion time per size, normalised to ACC's, and the bottleneck
      queue's mean and standard deviation.
   c. RDMA and TCP sharing under DWRR 70/30: 2 or 7 senders each send a long DCQCN flow
      (lossless class 0) and a long DCTCP flow (class 1) into one receiver; measured
      over the second half: RDMA's share of the receiver's link, the bottleneck queue,
      the total goodput. ACC tunes both classes here, learning online from scratch.
4. Training cost: simulated seconds and wall seconds of pre-training, and the learning
   curve (mean reward per episode).
"""

from __future__ import annotations

NAME = "acc"
TITLE = "ACC (Yan et al.): multi-agent Double DQN tuning ECN, against static ECN (SECN1, SECN2)"

from isthmus.learning.ecn_queues import templates  # noqa: E402
from isthmus.studies.acc.learnability import run_learnability  # noqa: E402
from isthmus.studies.acc.study import DEPARTURES, FULL, QUICK, figures, jobs, table  # noqa: E402
from isthmus.studies.acc.testbed import TESTBED, FabricSize, network  # noqa: E402

__all__ = [
    "DEPARTURES",
    "FULL",
    "NAME",
    "QUICK",
    "TESTBED",
    "TITLE",
    "FabricSize",
    "figures",
    "jobs",
    "network",
    "run_learnability",
    "table",
    "templates",
]
