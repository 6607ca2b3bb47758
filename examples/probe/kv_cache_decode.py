"""expect-ready: a stateful decode step: every call appends its key and value to a KV cache and
advances the cache's length, a device counter. Two eager calls on the same inputs differ (each
reads what the last one wrote), and a cache that is never reset runs off its end: the probe finds
the cache and the counter during the warm-up and restores them before every run.

`batch_dim=0` turns on row isolation: sequences of a batch never mix, so pad rows cannot leak.
"""

import torch

from graphready import ProbeTarget

HIDDEN = 64
MAX_LEN = 16
PROMPT = 5


def factory(bucket: int) -> ProbeTarget:
    gen = torch.Generator(device="cpu").manual_seed(0)
    wq, wk, wv = ((torch.randn(HIDDEN, HIDDEN, generator=gen) * 0.1).cuda() for _ in range(3))
    keys = torch.zeros(bucket, MAX_LEN, HIDDEN, device="cuda")
    values = torch.zeros(bucket, MAX_LEN, HIDDEN, device="cuda")
    length = torch.tensor(PROMPT, device="cuda")  # tokens already in the cache (a prefill)
    keys[:, :PROMPT] = torch.randn(bucket, PROMPT, HIDDEN, generator=gen).cuda()
    values[:, :PROMPT] = torch.randn(bucket, PROMPT, HIDDEN, generator=gen).cuda()
    positions = torch.arange(MAX_LEN, device="cuda")
    x = torch.randn(bucket, HIDDEN, device="cuda")

    def step(x):
        slot = length.view(1)
        keys.index_copy_(1, slot, (x @ wk).unsqueeze(1))
        values.index_copy_(1, slot, (x @ wv).unsqueeze(1))
        length.add_(1)
        scores = torch.einsum("bh,bth->bt", x @ wq, keys) / HIDDEN**0.5
        scores = scores.masked_fill(positions >= length, float("-inf"))
        return torch.einsum("bt,bth->bh", scores.softmax(-1), values)

    def make_inputs():
        return [torch.randn(bucket, HIDDEN, device="cuda")]

    return ProbeTarget(step=step, inputs=[x], make_inputs=make_inputs, batch_dim=0)
