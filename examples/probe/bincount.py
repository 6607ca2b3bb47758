"""`torch.bincount` sizes its output from the largest value: per-expert counts the wrong way."""

import torch

from graphready import ProbeTarget

EXPERTS = 16


def factory(bucket: int) -> ProbeTarget:
    experts = torch.randint(0, EXPERTS, (bucket, 2), device="cuda")

    def step(experts):
        counts = torch.bincount(experts.flatten(), minlength=EXPERTS)  # expect: sync_scan profiler_scan capture
        return counts

    return ProbeTarget(step=step, inputs=[experts])
