"""A padded fp32 scale buffer from `torch.empty`, only partly written, consumed whole.

The rows at or past the live batch keep whatever was in that memory; a consumer that validates
or reads the whole buffer sees garbage. The probe's uninitialised-memory phase fills such memory
with NaN and names the allocation.
"""

import torch

from graphready import ProbeTarget

GROUP = 128
PADDED_ROWS = 64


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, 4 * GROUP, device="cuda")

    def step(x):
        groups = x.shape[1] // GROUP
        scale = torch.empty(PADDED_ROWS, groups, dtype=torch.float32, device=x.device)  # expect: uninitialized
        amax = x.view(x.shape[0], groups, GROUP).abs().amax(dim=-1).clamp(min=1e-4)
        scale[: x.shape[0]] = amax / 448.0
        return scale

    return ProbeTarget(step=step, inputs=[x])
