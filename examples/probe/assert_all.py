"""`assert (x >= 0).all()` validates on the host what lives on the device."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.rand(bucket, 128, device="cuda")

    def step(x):
        assert (x >= 0).all(), "inputs must be non-negative"  # expect: sync_scan profiler_scan capture
        return x.sqrt()

    return ProbeTarget(step=step, inputs=[x])
