"""A backend for Ascend NPUs (the file's name says so): a device without CUDA graphs, so nothing
here is reported, though the base class's calls reach it."""

import torch

from engine.attention.base import AttentionBackend


class NpuBackend(AttentionBackend):
    def forward_decode(self, q, batch):
        total = int(batch.extend_seq_lens.sum())
        return q[:total]
