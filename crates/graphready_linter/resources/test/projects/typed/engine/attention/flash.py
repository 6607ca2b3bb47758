import torch

from engine.attention.base import AttentionBackend
from engine.attention.indices import IndicesUpdater


class FlashBackend(AttentionBackend):
    def init_forward_metadata(self, batch):
        # Per-step metadata preparation outside the graph: a stall every step.
        self.max_len = batch.seq_lens.max().item()
        self.indices_updater.update(batch)

    def init_cuda_graph_state(self, max_bs):
        self.graph_max_len = max_bs

    def forward_decode(self, q, batch):
        if batch.seq_lens.max() > 1024:
            q = q * 0.5
        return q

    def __init__(self, sliding_window: bool):
        self.indices_updater = IndicesUpdater(sliding_window)
