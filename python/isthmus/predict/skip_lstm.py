"""Skip-LSTM: an LSTM that learns to skip state updates (Campos, Jou, Giró-i-Nieto,
Torres and Chang, "Skip RNN: Learning to Skip State Updates in Recurrent Neural
Networks", ICLR 2018), one of IBCN's queue-size forecasters.

At each step t of the window, with x_t the row read and s = (h, c) the LSTM state:

1. u_t = round(ũ_t) ∈ {0, 1} decides whether the state is updated (ũ_1 = 1: the first
   row is always read).
2. s_t = u_t · LSTM(s_{t−1}, x_t) + (1 − u_t) · s_{t−1}: a skipped step copies the
   state unchanged.
3. Δũ_t = σ(w_p · c_t + b_p), the probability of updating, from the new cell state.
4. ũ_{t+1} = u_t · Δũ_t + (1 − u_t) · (ũ_t + min(Δũ_t, 1 − ũ_t)): after an update the
   probability restarts at Δũ_t; while skipping it grows by Δũ_t of the last update
   each step, so a state is never skipped for ever.
5. Training: round() has zero gradient almost everywhere, so its gradient is taken
   as 1 (the straight-through estimator), and the loss gains the budget term
   λ · Σ_t u_t (averaged over the batch), which prices every update; λ = 0 leaves the
   skipping to the forecast error alone.

The forecast is read from the last hidden state, as for the other recurrent nets.
With several layers one gate, read from the top layer's cell state, updates or skips
the whole stack, as in the authors' multi-layer cell. A batch steps all its windows
together and masks the skipped updates, so training costs a full LSTM; in inference,
a step that every window skips is not computed.
"""

from __future__ import annotations

import torch
from torch import nn

from isthmus.predict.nets import Network

GATE_BIAS = 1.0
"""Initial bias of the update gate: σ(1) ≈ 0.73, so an untrained net updates at every
step and learns to skip (the authors' code starts the gate at this bias)."""


def binarize(probability: torch.Tensor) -> torch.Tensor:
    """round() forwards, identity backwards (the straight-through estimator)."""
    return probability + (torch.round(probability) - probability).detach()


class SkipLSTMNet(Network):
    def __init__(
        self,
        variables: int,
        horizon: int,
        targets: list[int],
        *,
        residual: bool,
        layers: int,
        hidden: int,
        budget: float,
    ) -> None:
        super().__init__(horizon, targets, residual)
        self.hidden = hidden
        self.budget = budget
        self.cells = nn.ModuleList(
            nn.LSTMCell(variables if i == 0 else hidden, hidden) for i in range(layers)
        )
        self.gate = nn.Linear(hidden, 1)
        nn.init.constant_(self.gate.bias, GATE_BIAS)
        self.head = nn.Linear(hidden, horizon * len(targets))

    def gated(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The top layer's last hidden state (batch × hidden) and every step's update
        decision u_t (batch × window), 1 where the state was updated."""
        batch, steps, _ = x.shape
        h = [x.new_zeros(batch, self.hidden) for _ in self.cells]
        c = [x.new_zeros(batch, self.hidden) for _ in self.cells]
        probability = x.new_ones(batch, 1)
        delta = probability  # replaced at step 1, which always updates
        decisions = []
        for t in range(steps):
            u = binarize(probability)
            decisions.append(u)
            # With no gradient to carry, a step no window updates at is not computed:
            # it would leave h, c and Δũ exactly as they are.
            if torch.is_grad_enabled() or bool(u.any()):
                row = x[:, t]
                for i, cell in enumerate(self.cells):
                    h_new, c_new = cell(row, (h[i], c[i]))
                    h[i] = u * h_new + (1 - u) * h[i]
                    c[i] = u * c_new + (1 - u) * c[i]
                    row = h[i]
                delta = torch.sigmoid(self.gate(c[-1]))
            probability = u * delta + (1 - u) * (
                probability + torch.minimum(delta, 1 - probability)
            )
        return h[-1], torch.cat(decisions, dim=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        last, updates = self.gated(x)
        penalty = self.budget * updates.sum(dim=1).mean()
        return self.shaped(self.head(last), x), penalty
