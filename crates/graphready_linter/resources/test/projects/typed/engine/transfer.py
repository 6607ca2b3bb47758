"""A worker that pops transferred requests every step: it reads the first id from the host
metadata buffers (no sync) and the first score from the device buffers (a sync), through
tuples another module's methods return, and through the buffers' attributes, which their
constructors make in host or device memory."""

import torch
from torch import nn

from engine.transfer_buffers import BufferBase, MetadataBuffers, ScoreBuffers


class TransferQueue:
    def __init__(self, metadata: MetadataBuffers, scores: ScoreBuffers):
        self.metadata = metadata
        self.scores = scores

    def pop(self, idx: int):
        ids, _ = self.metadata.get_buf(idx)
        first = ids[0].item()
        scores, _ = self.scores.get_buf(idx)
        return first, scores[0].item(), self.gate(self.metadata, self.scores)

    def gate(self, metadata: MetadataBuffers, scores: ScoreBuffers):
        return metadata.ids[0, 0].item(), scores.scores[0, 0].item(), first_id(self.metadata)


def first_id(buffers):
    # Unannotated: its one call site passes the host metadata buffers.
    return buffers.ids[0, 0].item()


class TransferModel(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class TransferWorker:
    def __init__(self, queue: TransferQueue):
        self.model = TransferModel()
        self.queue = queue

    def run(self, x: torch.Tensor):
        while True:
            self.model(x)
            self.queue.pop(0)
            self.peek_first(self.queue.metadata, 0)

    def peek_first(self, buffers: BufferBase, idx: int):
        # A base whose method only raises cannot be what the call unpacks: the host ids of the
        # one class that returns something decide.
        ids, _ = buffers.peek(idx)
        return ids[0].item()
