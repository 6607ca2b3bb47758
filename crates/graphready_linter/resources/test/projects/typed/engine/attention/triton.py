import torch

from engine.attention.base import AttentionBackend


class TritonBackend(AttentionBackend):
    def init_forward_metadata(self, batch):
        # Device work only: nothing to report.
        self.indptr = torch.cumsum(batch.seq_lens, dim=0)

    def init_cuda_graph_state(self, max_bs):
        self.graph_indptr = torch.zeros(max_bs + 1, dtype=torch.int32, device="cuda")

    def forward_decode(self, q, batch):
        total = int(batch.extend_seq_lens.sum())
        return q[:total]
