"""`if t.any():` branches on a device value."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 128, device="cuda")

    def step(x):
        y = x * 2
        if torch.isnan(y).any():  # expect: sync_scan profiler_scan capture
            y = torch.nan_to_num(y)
        return y

    return ProbeTarget(step=step, inputs=[x])
