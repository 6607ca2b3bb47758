"""expect-ready: a small MoE decode step written the capture-safe way.

- tokens arrive through a pinned host buffer and `copy_(..., non_blocking=True)` into a static
  device buffer (no `buf[0] = int`, no `torch.tensor(list)`);
- the router's top-k stays on the device;
- per-expert counts come from `scatter_add_` into a preallocated buffer (not `bincount`);
- every expert runs at a fixed shape over the whole batch and is masked by its routing weight
  (no per-expert launch counts read on the host);
- outputs are written in place into static buffers.

One graph per bucket (batch size); the bucket is a host integer, which is fine.
"""

import torch
import torch.nn.functional as F

from graphready import ProbeTarget

VOCAB = 32000
HIDDEN = 512
FFN = 512
EXPERTS = 16
TOP_K = 2
LAYERS = 8
DTYPE = torch.bfloat16


class MoEDecoder:
    def __init__(self, bucket: int):
        gen = torch.Generator(device="cpu").manual_seed(0)

        def param(*shape):
            return (torch.randn(*shape, generator=gen) * 0.02).to("cuda", DTYPE)

        self.bucket = bucket
        self.embed = param(VOCAB, HIDDEN)
        self.layers = [
            {
                "norm": torch.ones(HIDDEN, device="cuda", dtype=DTYPE),
                "router": param(HIDDEN, EXPERTS),
                "w_up": param(EXPERTS, HIDDEN, FFN),
                "w_down": param(EXPERTS, FFN, HIDDEN),
            }
            for _ in range(LAYERS)
        ]
        self.lm_head = param(HIDDEN, VOCAB)
        # Static buffers, allocated once.
        self.tokens_host = torch.zeros(bucket, dtype=torch.long).pin_memory()
        self.tokens = torch.zeros(bucket, dtype=torch.long, device="cuda")
        self.counts = torch.zeros(LAYERS, EXPERTS, dtype=torch.long, device="cuda")
        self.ones = torch.ones(bucket * TOP_K, dtype=torch.long, device="cuda")
        self.gates = torch.zeros(bucket, EXPERTS, device="cuda", dtype=DTYPE)
        self.next_tokens = torch.zeros(bucket, dtype=torch.long, device="cuda")

    def moe(self, i: int, layer: dict, x: torch.Tensor) -> torch.Tensor:
        probs = (x @ layer["router"]).softmax(dim=-1)
        weights, experts = torch.topk(probs, TOP_K, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        counts = self.counts[i]
        counts.zero_()
        counts.scatter_add_(0, experts.reshape(-1), self.ones)
        self.gates.zero_()
        self.gates.scatter_(1, experts, weights)
        # Fixed shape: every expert sees the whole batch; unrouted tokens get weight zero.
        h = F.silu(torch.bmm(x.expand(EXPERTS, -1, -1), layer["w_up"]))
        y = torch.bmm(h, layer["w_down"])
        return (y * self.gates.t().unsqueeze(-1)).sum(dim=0)

    def step(self, tokens_host: torch.Tensor):
        self.tokens.copy_(tokens_host, non_blocking=True)
        x = self.embed[self.tokens]
        for i, layer in enumerate(self.layers):
            x = x + self.moe(i, layer, F.rms_norm(x, (HIDDEN,), layer["norm"]))
        logits = x @ self.lm_head
        torch.argmax(logits, dim=-1, out=self.next_tokens)
        return self.next_tokens, self.counts

    def random_tokens(self):
        return [torch.randint(0, VOCAB, (self.bucket,))]


def factory(bucket: int) -> ProbeTarget:
    model = MoEDecoder(bucket)
    model.tokens_host.copy_(model.random_tokens()[0])
    return ProbeTarget(
        step=model.step,
        inputs=[model.tokens_host],
        make_inputs=model.random_tokens,
        name=f"moe-decode-b{bucket}",
    )
