"""`nonzero` has a data-dependent output shape."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 128, device="cuda")

    def step(x):
        idx = (x > 0).nonzero()  # expect: sync_scan profiler_scan capture
        return idx.shape[0] * x

    return ProbeTarget(step=step, inputs=[x])
