"""A backend without the base's capture set-up (`init_cuda_graph_state`): the engine cannot
capture it and runs it eagerly, so its syncs stall every step instead of breaking capture."""

import torch

from engine.attention.base import AttentionBackend


class EagerBackend(AttentionBackend):
    def init_forward_metadata(self, batch):
        self.lens = batch.seq_lens

    def forward_decode(self, q, batch):
        for i in range(int(self.lens.max())):
            q = q + i
        return q
