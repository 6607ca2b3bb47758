"""A per-tensor FP8 scale taken over the whole padded bucket: NaN or garbage in the pad rows
becomes the amax, and every real row is quantised with it. Row isolation (`batch_dim=0`) fills
the pad rows with hostile values and finds the real rows changed.

expect-row-leak: out[0] out[1]
"""

import torch

from graphready import ProbeTarget

HIDDEN = 256
FP8_MAX = 448.0


def factory(bucket: int) -> ProbeTarget:
    x = torch.randn(bucket, HIDDEN, device="cuda")
    q = torch.empty(bucket, HIDDEN, dtype=torch.float8_e4m3fn, device="cuda")
    scale = torch.empty((), device="cuda")

    def step(x):
        torch.div(x.abs().amax(), FP8_MAX, out=scale)  # over every row, pad rows included
        q.copy_((x / scale).clamp(-FP8_MAX, FP8_MAX))
        return q, scale

    return ProbeTarget(step=step, inputs=[x], batch_dim=0)
