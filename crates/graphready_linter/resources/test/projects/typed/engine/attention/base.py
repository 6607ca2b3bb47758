"""The backend interface: callers hold the base class, subclasses run."""

import torch

from engine.batch import ForwardBatch


class AttentionBackend:
    def init_forward_metadata(self, batch: ForwardBatch) -> None:
        raise NotImplementedError

    def init_cuda_graph_state(self, max_bs: int) -> None:
        """Capture set-up: backends that run in CUDA graphs implement it."""
        raise NotImplementedError()

    def forward(self, q: torch.Tensor, batch: ForwardBatch) -> torch.Tensor:
        # Template method: `self` is a subclass at run time.
        return self.forward_decode(q, batch)

    def forward_decode(self, q: torch.Tensor, batch: ForwardBatch) -> torch.Tensor:
        raise NotImplementedError
