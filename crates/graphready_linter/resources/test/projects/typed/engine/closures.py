"""A closure that reads its enclosing function's host tensor, set after the closure's `def`:
what the closure sees is what the name holds when it runs, a host tensor."""

import torch
from torch import nn


class RoundLayer(nn.Module):
    def forward(self, x: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        def next_round():
            nonlocal remaining
            now = remaining.minimum(torch.tensor(4))
            remaining -= now
            return now.tolist()

        def device_round():
            return x.amax().item()

        remaining = torch.tensor(sizes)
        rounds = []
        while remaining.sum() > 0:
            rounds.append(next_round())
        return x * (len(rounds) + device_round())
