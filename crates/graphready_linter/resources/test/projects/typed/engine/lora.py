"""LoRA layers with eager paths and a fallback mask, and a head whose prompt logprobs run eagerly."""

import torch
from torch import nn


class LoraLayer(nn.Module):
    def forward(self, x: torch.Tensor, batch_info):
        if batch_info.use_cuda_graph:
            return x * 2
        # Only batches no graph runs come here: eagerly, on every step that has one.
        return x[: int(x.sum())]


class ScaledLora(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        # Without a mask, a host one; with one, the caller's, which may live on the device: its
        # sum read on the host waits for the device then.
        if mask is None:
            mask = torch.ones(x.shape[0])
        return x * int(mask.sum())


class LogprobHead(nn.Module):
    def forward(self, logits: torch.Tensor, metadata):
        if not metadata.extend_return_logprob:
            return logits
        # Only an extend batch asking for its prompt's logprobs comes here: eagerly.
        return logits.max(-1).values.tolist()
