"""`x[mask]` with a boolean mask has a data-dependent output shape."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 128, device="cuda")

    def step(x):
        positive = x[x > 0]  # expect: sync_scan profiler_scan capture
        return positive.sum()

    return ProbeTarget(step=step, inputs=[x])
