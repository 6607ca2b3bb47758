"""An index buffer from `torch.empty`, written only in part and gathered whole. The unwritten
entries hold whatever that memory held (here, zeros from a freed scratch buffer of the same size,
so eager runs look fine). Filled as uninitialised memory (integer max), they index out of range
and trip a device-side assert, which leaves the CUDA context unusable. The probe re-runs the phase
without the fill: no assert, so the step reads memory it never wrote.
"""

import torch

from graphready import ProbeTarget

ROWS = 4099  # an allocation size nothing else in the process uses


def factory(bucket: int) -> ProbeTarget:
    table = torch.randn(64, 16, device="cuda")
    ids = torch.randint(0, 64, (bucket,), device="cuda")

    def step(ids):
        scratch = torch.zeros(ROWS, dtype=torch.long, device=ids.device)
        del scratch  # the next torch.empty of this size gets its zeroed block back
        index = torch.empty(ROWS, dtype=torch.long, device=ids.device)  # expect: uninitialized
        index[: ids.numel()] = ids
        return table.index_select(0, index)

    return ProbeTarget(step=step, inputs=[ids])
