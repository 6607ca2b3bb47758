"""A small MoE decode step with the hazards graphready exists to find.

Run `graphready check examples/` to see them. Each hazard has a graph-safe twin in the comments.
"""

import logging

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


def pack_ue8m0_to_int(x: torch.Tensor) -> torch.Tensor:
    """DeepGEMM's original helper (issue #414): the asserts sync inside capture."""
    assert x.dtype == torch.float and x.size(-1) % 4 == 0
    x_int = x.view(torch.int)
    assert (x_int >= 0).all() and (x_int & 0x7FFFFF == 0).all()
    return (x_int >> 23).to(torch.uint8).view(torch.int)


def pack_ue8m0_to_int_checked(x: torch.Tensor) -> torch.Tensor:
    """The fixed helper: validation runs eagerly and is skipped only while capturing."""
    assert x.dtype == torch.float and x.size(-1) % 4 == 0
    x_int = x.view(torch.int)
    if not x.is_cuda or not torch.cuda.is_current_stream_capturing():
        assert ((x_int >> 31) == 0).all(), "scale values must be non-negative"
        assert ((x_int & 0x7FFFFF) == 0).all(), "scale values must have zero mantissa"
    return (x_int >> 23).to(torch.uint8).view(torch.int)


class Router(nn.Module):
    def __init__(self, hidden: int, experts: int, top_k: int):
        super().__init__()
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.top_k = top_k
        self.register_buffer("tokens_per_expert", torch.zeros(experts, dtype=torch.int64))

    def forward(self, x: torch.Tensor):
        logits = self.gate(x)
        logger.debug("router logits: %s", logits)  # formats a device tensor
        weights, experts = torch.topk(F.softmax(logits, dim=-1), self.top_k)
        counts = torch.bincount(experts.flatten(), minlength=logits.size(-1))
        if counts.max() > 4 * x.size(0):  # host branch on a device value
            logger.warning("unbalanced routing")
        self.tokens_per_expert.zero_()
        self.tokens_per_expert.scatter_add_(0, experts.flatten(), torch.ones_like(experts.flatten()))
        scales = pack_ue8m0_to_int(weights.float().contiguous().view(-1, 2).repeat(1, 2))
        return weights, experts, scales


class DecodeStep(nn.Module):
    def __init__(self, hidden: int = 256, experts: int = 8, top_k: int = 2):
        super().__init__()
        self.router = Router(hidden, experts, top_k)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, num_tokens: torch.Tensor) -> torch.Tensor:
        weights, experts, _ = self.router(x)
        scale = x.abs().max().item()  # device -> host sync
        y = self.proj(x / scale)
        active = y[:num_tokens]  # a device scalar as a slice bound
        torch.cuda.synchronize()  # an explicit wait
        if not torch.cuda.is_current_stream_capturing():
            assert torch.isfinite(y).all(), "non-finite activations"  # eager-only: fine
        return active * weights.sum(-1, keepdim=True)[: active.size(0)]
