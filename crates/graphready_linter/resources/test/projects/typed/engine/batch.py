"""The per-step batch: a dataclass whose fields the backends read."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import torch

if TYPE_CHECKING:
    from engine.attention.base import AttentionBackend


@dataclass
class ForwardBatch:
    seq_lens: torch.Tensor
    extend_seq_lens: Optional[torch.Tensor]
    attn_backend: "AttentionBackend"
