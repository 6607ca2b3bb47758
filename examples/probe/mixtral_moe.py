"""transformers' Mixtral sparse-MoE block with the eager experts loop (`experts_implementation=
"eager"`): it asks which experts were hit with `.nonzero()`, compares a device value on the host
and gathers tokens with one-argument `torch.where`, each a sync and a data-dependent shape. The
user's line is the block call; the probe names the lines inside transformers that issued them.

A tiny random config built from `MixtralConfig`; no weights downloaded. Needs transformers (5.x).

expect-innermost: transformers/models/mixtral/modeling_mixtral.py
"""

import torch
from transformers import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

from graphready import ProbeTarget

HIDDEN = 64


def factory(bucket: int) -> ProbeTarget:
    torch.manual_seed(0)
    config = MixtralConfig(
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_local_experts=8,
        num_experts_per_tok=2,
        experts_implementation="eager",
    )
    block = MixtralSparseMoeBlock(config)
    for p in block.parameters():
        torch.nn.init.normal_(p, std=0.05)  # the experts are created with torch.empty
    block = block.to(device="cuda", dtype=torch.bfloat16).eval()
    hidden = torch.randn(bucket, 1, HIDDEN, device="cuda", dtype=torch.bfloat16)

    def step(hidden):
        with torch.no_grad():
            return block(hidden)  # expect: sync_scan capture

    return ProbeTarget(step=step, inputs=[hidden])
