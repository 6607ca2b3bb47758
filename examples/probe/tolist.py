"""`.tolist()` copies a device tensor to a Python list."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    logits = torch.randn(bucket, 64, device="cuda")

    def step(logits):
        best = logits.argmax(dim=-1).tolist()  # expect: sync_scan profiler_scan capture
        return logits * len(best)

    return ProbeTarget(step=step, inputs=[logits])
