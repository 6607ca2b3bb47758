"""`.item()` reads a device value on the host: a sync in eager, a broken capture."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 256, device="cuda")

    def step(x):
        scale = x.abs().max().item()  # expect: sync_scan profiler_scan capture
        return x / scale

    return ProbeTarget(step=step, inputs=[x])
