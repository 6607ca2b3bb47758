"""A step that trips a device-side assert (an out-of-range gather index), which poisons the
CUDA context (error 710): the phase is recorded as an error and later phases as skipped."""

import torch

from graphready import ProbeTarget


def factory(bucket: int) -> ProbeTarget:
    table = torch.randn(8, 16, device="cuda")
    index = torch.full((bucket,), 1000, dtype=torch.long, device="cuda")

    def step(index):
        return torch.index_select(table, 0, index)  # out of range: device-side assert

    return ProbeTarget(step=step, inputs=[index])
