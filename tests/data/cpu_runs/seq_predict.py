"""Sequence prediction with two stacked LSTM cells, trained with LBFGS on float64 sine waves.

A test program for neuron-lint (tests/test_fix_runs_on_cpu.py): written in the usual CUDA style
(`.cuda()` under `torch.cuda.is_available()`, `torch.cuda.manual_seed`, a "cuda"-or-"cpu" device),
fixed by neuron-lint, and run on CPU-only torch before and after. It prints its losses.
"""
import argparse
import math

import torch
from torch import nn, optim

HIDDEN = 12

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Predictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell1 = nn.LSTMCell(1, HIDDEN)
        self.cell2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, seq, future=0):
        state1 = [torch.zeros(seq.size(0), HIDDEN, dtype=torch.double, device=seq.device) for _ in range(2)]
        state2 = [torch.zeros(seq.size(0), HIDDEN, dtype=torch.double, device=seq.device) for _ in range(2)]
        outputs = []
        for x_t in seq.split(1, dim=1):
            state1 = self.cell1(x_t, state1)
            state2 = self.cell2(state1[0], state2)
            out = self.head(state2[0])
            outputs.append(out)
        for _ in range(future):
            state1 = self.cell1(out, state1)
            state2 = self.cell2(state1[0], state2)
            out = self.head(state2[0])
            outputs.append(out)
        return torch.cat(outputs, dim=1)


def sine_waves(n, length, period=8.0):
    gen = torch.Generator().manual_seed(7)
    shift = torch.randint(-20, 20, (n, 1), generator=gen, dtype=torch.float64)
    t = torch.arange(length, dtype=torch.float64) + shift
    return torch.sin(t / period)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10, help="LBFGS steps")
    parser.add_argument("--length", type=int, default=40)
    opt = parser.parse_args()

    torch.manual_seed(0)
    torch.cuda.manual_seed(0)
    data = sine_waves(8, opt.length)
    train_x, train_y = data[2:, :-1].to(device), data[2:, 1:].to(device)
    test_x, test_y = data[:2, :-1].to(device), data[:2, 1:].to(device)

    model = Predictor()
    model.double()
    if torch.cuda.is_available():
        model.cuda()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(model.parameters(), lr=0.8, max_iter=4)

    for step in range(opt.steps):
        def closure(step=step):
            optimizer.zero_grad()
            loss = criterion(model(train_x), train_y)
            print(f"step {step} loss {loss.item():.12f}")
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            future = 10
            pred = model(test_x, future=future)
            test_loss = criterion(pred[:, :-future], test_y)
            print(f"step {step} test loss {test_loss.item():.12f} dtype {pred.dtype}")
            assert math.isfinite(test_loss.item())


if __name__ == "__main__":
    main()
