"""The PyTorch side of the neural forecasters (neural.py holds the Forecaster side and
imports this module only when a neural forecaster is made, so the statistical models
never pay for importing torch).

Every network maps a batch of normalised windows (batch × window × variables) to
forecasts (batch × horizon × targets) in one forward pass, and also returns a penalty
added to its training loss: zero, except Skip-LSTM's budget term (skip_lstm.py). A
residual network forecasts each target as its last value in the window plus what its
layers output, so they learn the change to come rather than the level.

train() is the one training loop every network shares:

1. Seed torch's generator for the example order (the initial weights were drawn
   under the same seed when the network was built, see seeded()).
2. Each epoch: shuffle the training examples, take Adam steps on minibatches of
   `batch_size`, loss = mean squared error + the network's penalty.
3. After each epoch: the same loss on the validation examples (for Skip-LSTM the
   budget term counts here too: the weights kept are those that best balance error
   and updates, the objective trained for). An epoch that lowers it is the best so
   far, and its weights are copied.
4. Stop after `patience` epochs without a new best, or after `epochs`; load the best
   epoch's weights back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

EVAL_CHUNK = 8192
"""Validation examples per forward pass: bounds memory on long validation segments."""


class Network(nn.Module):
    """Windows (batch × window × variables) → (forecasts (batch × horizon × targets),
    penalty to add to the training loss). targets: the input columns forecast."""

    def __init__(self, horizon: int, targets: list[int], residual: bool) -> None:
        super().__init__()
        self.horizon = horizon
        self.residual = residual
        self.register_buffer("targets", torch.tensor(targets), persistent=False)

    def shaped(self, flat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """One output unit per (step, target), as (batch × horizon × targets), added
        to each target's last value in the window if the network is residual."""
        out = flat.view(-1, self.horizon, len(self.targets))
        return out + x[:, -1, self.targets].unsqueeze(1) if self.residual else out


class DenseNet(Network):
    """Diolkos's Dense model: the window flattened, then 0 or 1 hidden ReLU layers, then
    a linear layer with one output per (step, target). With no hidden layer it is a
    linear autoregression on every variable's window."""

    def __init__(
        self,
        window: int,
        variables: int,
        horizon: int,
        targets: list[int],
        *,
        residual: bool,
        hidden_layers: int,
        hidden: int,
    ) -> None:
        super().__init__(horizon, targets, residual)
        width = window * variables
        layers: list[nn.Module] = [nn.Flatten()]
        if hidden_layers:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, horizon * len(targets)))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.shaped(self.layers(x), x), x.new_zeros(())


def dense_forward_many(networks: list[DenseNet], windows: torch.Tensor) -> torch.Tensor:
    """Many Dense nets of one shape, each on its own window, in one batched product per
    layer: (nets × window × variables) → (nets × horizon × targets), what each
    net(windows[i:i+1]) gives. Switches that each train their own net are forecast in one
    pass this way."""
    layers = [[m for m in net.layers if isinstance(m, nn.Linear)] for net in networks]
    x = windows.flatten(1).unsqueeze(1)  # nets × 1 × (window · variables)
    for depth in range(len(layers[0])):
        weight = torch.stack([linears[depth].weight for linears in layers])
        bias = torch.stack([linears[depth].bias for linears in layers])
        x = torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
        if depth < len(layers[0]) - 1:
            x = torch.relu(x)
    return networks[0].shaped(x.squeeze(1), windows)


RECURRENT = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}


class RecurrentNet(Network):
    """A stack of recurrent layers (Elman RNN with tanh, GRU or LSTM) read over the
    window; a linear layer maps the top layer's last hidden state to one output per
    (step, target). Bidirectional: the top layer's forward state after the newest row
    and its backward state after the oldest row, side by side."""

    def __init__(
        self,
        cell: str,
        variables: int,
        horizon: int,
        targets: list[int],
        *,
        residual: bool,
        layers: int,
        hidden: int,
        bidirectional: bool = False,
    ) -> None:
        super().__init__(horizon, targets, residual)
        self.bidirectional = bidirectional
        self.recurrent = RECURRENT[cell](
            variables, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional
        )
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), horizon * len(targets))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, state = self.recurrent(x)
        h = state[0] if isinstance(state, tuple) else state  # an LSTM's state is (h, c)
        # h is (layers × directions) × batch × hidden, the top layer's directions last.
        last = torch.cat([h[-2], h[-1]], dim=1) if self.bidirectional else h[-1]
        return self.shaped(self.head(last), x), x.new_zeros(())


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Draw from torch's global generator as seeded, then put it back as it was: the
    initial weights depend on the seed alone, and the caller's own draws are untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@contextmanager
def cpu_threads(count: int) -> Iterator[None]:
    """Run torch's CPU kernels on `count` threads, then give the process its own
    setting back."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def device_for(name: str) -> torch.device:
    """ "auto" is CUDA when this machine has it, the CPU otherwise."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"device is {name!r} but torch finds no CUDA GPU here; pass device='auto' or 'cpu'"
        )
    return torch.device(name)


@dataclass(frozen=True)
class Run:
    """What one training run did: epochs run, the best epoch (1-based; 0 if none beat
    the initial weights) and its validation mean squared error (normalised values)."""

    epochs: int
    best_epoch: int
    validation_mse: float


def as_tensor(values: object, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(values, dtype=torch.float32, device=device)


def validation_loss(net: Network, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(mean squared error, mean squared error + penalty) over every example."""
    net.eval()
    squared, penalty = 0.0, 0.0
    with torch.inference_mode():
        for start in range(0, len(x), EVAL_CHUNK):
            chunk = slice(start, start + EVAL_CHUNK)
            predicted, extra = net(x[chunk])
            squared += float(((predicted - y[chunk]) ** 2).sum())
            penalty += float(extra) * len(predicted)  # the penalty is a mean per example
    return squared / y.numel(), squared / y.numel() + penalty / len(x)


def train(
    net: Network,
    training: tuple[torch.Tensor, torch.Tensor],
    validation: tuple[torch.Tensor, torch.Tensor],
    *,
    epochs: int,
    patience: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
) -> Run:
    """Fit `net` in place on (inputs, targets) with early stopping on `validation`."""
    x, y = training
    order = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.Adam(net.parameters(), lr=learning_rate)
    error, best = validation_loss(net, *validation)
    best_epoch, kept = 0, _copy(net)
    epoch = 0
    for epoch in range(1, epochs + 1):
        net.train()
        # The permutation is drawn on the CPU so the order is the same on every device.
        for batch in torch.randperm(len(x), generator=order).to(x.device).split(batch_size):
            optimiser.zero_grad(set_to_none=True)
            predicted, penalty = net(x[batch])
            loss = nn.functional.mse_loss(predicted, y[batch]) + penalty
            loss.backward()
            optimiser.step()
        squared, loss = validation_loss(net, *validation)
        if loss < best:
            error, best, best_epoch, kept = squared, loss, epoch, _copy(net)
        elif epoch - best_epoch >= patience:
            break
    net.load_state_dict(kept)
    net.eval()
    return Run(epoch, best_epoch, error)


def _copy(net: Network) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in net.state_dict().items()}
