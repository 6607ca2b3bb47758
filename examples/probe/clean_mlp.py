"""expect-ready: a clean step: static buffers, in-place output, no host reads."""

import torch

from graphready import ProbeTarget

HIDDEN = 512


def factory(bucket: int) -> ProbeTarget:
    gen = torch.Generator(device="cpu").manual_seed(0)
    w1 = (torch.randn(HIDDEN, 4 * HIDDEN, generator=gen) * 0.02).cuda()
    w2 = (torch.randn(4 * HIDDEN, HIDDEN, generator=gen) * 0.02).cuda()
    x = torch.randn(bucket, HIDDEN, device="cuda")
    out = torch.empty(bucket, HIDDEN, device="cuda")

    def step(x):
        h = torch.nn.functional.gelu(x @ w1)
        torch.matmul(h, w2, out=out)
        out.add_(x)
        return out

    def make_inputs():
        return [torch.randn(bucket, HIDDEN, device="cuda")]

    return ProbeTarget(step=step, inputs=[x], make_inputs=make_inputs)
