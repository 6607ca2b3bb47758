"""`torch.cuda.synchronize()`: sync-debug mode is silent about it; the probe is not."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 256, device="cuda")

    def step(x):
        y = torch.relu(x)
        torch.cuda.synchronize()  # expect: sync_scan profiler_scan capture
        return y * 2

    return ProbeTarget(step=step, inputs=[x])
