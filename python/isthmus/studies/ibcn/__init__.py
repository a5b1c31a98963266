"""IBCN (Tran, Nguyen, Souihi, Mellouk, "Towards a Novel Congestion Notification
Algorithm for Software-Defined Data Center Networks"), both halves of its evaluation:
how well each forecaster predicts BCN queues (`prediction`), and what BCN driven by the
forecasts does for transactions and continuous senders (`congestion`).
"""

from __future__ import annotations

NAME = "ibcn"
TITLE = "IBCN (Tran et al.): forecast switch queues (LSTM vs ARMA/ARAR/HW) and BCN driven by them"

from isthmus.studies.ibcn.prediction import MODEL_OPTIONS, collect  # noqa: E402
from isthmus.studies.ibcn.study import DEPARTURES, FULL, QUICK, jobs, table  # noqa: E402

__all__ = [
    "DEPARTURES",
    "FULL",
    "MODEL_OPTIONS",
    "NAME",
    "QUICK",
    "TITLE",
    "collect",
    "jobs",
    "table",
]
