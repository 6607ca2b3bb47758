"""The per-step batch: a dataclass whose fields the backends read."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np
import torch

if TYPE_CHECKING:
    from engine.attention.base import AttentionBackend


@dataclass
class ForwardBatch:
    seq_lens: torch.Tensor
    extend_seq_lens: Optional[torch.Tensor]
    attn_backend: "AttentionBackend"
    _seq_lens_cpu: Optional[torch.Tensor] = None
    num_scheduled: np.ndarray = None

    @property
    def seq_lens_cpu(self) -> torch.Tensor:
        # A host copy made on first read. The batch is a new record every step, so the cache
        # does not last: every step copies, and waits for the device.
        if self._seq_lens_cpu is None:
            self._seq_lens_cpu = self.seq_lens.to("cpu")
        return self._seq_lens_cpu

    @property
    def batch_size(self) -> int:
        # Metadata only: reading it costs nothing.
        return self.seq_lens.shape[0]
