"""Transfer buffers: the metadata ones live on the host under the defaults (on the device only on
another platform), the score ones on the device. Another module unpacks what `get_buf` returns."""

import torch


def is_npu() -> bool:
    return False


class BufferBase:
    def peek(self, idx: int):
        # Every buffer class says what it holds; this one holds nothing.
        raise NotImplementedError


class MetadataBuffers(BufferBase):
    def __init__(self, size: int):
        device = "cpu"
        if is_npu():
            device = "npu"
        self.ids = torch.zeros((size, 16), dtype=torch.int32, device=device)
        self.scores = torch.zeros((size, 16), dtype=torch.float32, device=device)

    def get_buf(self, idx: int):
        return self.ids[idx].clone(), self.scores[idx].clone()

    def peek(self, idx: int):
        return self.ids[idx].clone(), idx


class ScoreBuffers:
    def __init__(self, size: int):
        self.scores = torch.zeros((size, 16), dtype=torch.float32, device="cuda")

    def get_buf(self, idx: int):
        return self.scores[idx].clone(), idx
