"""`torch.tensor(list, device="cuda")` copies host data from pageable memory every step."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 8, device="cuda")
    weights = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]

    def step(x):
        w = torch.tensor(weights, device="cuda")  # expect: sync_scan profiler_scan capture
        return x * w

    return ProbeTarget(step=step, inputs=[x])
