"""`buf[0] = python_int` writes a host value into a device tensor (a decode loop's token-id buffer, say)."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    tokens = torch.randint(0, 1000, (bucket,), device="cuda")
    position = torch.zeros(1, dtype=torch.long, device="cuda")
    step_number = 41

    def step(tokens):
        position[0] = step_number  # expect: sync_scan profiler_scan capture
        return tokens + position

    return ProbeTarget(step=step, inputs=[tokens])
