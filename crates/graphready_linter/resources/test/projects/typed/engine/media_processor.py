"""An engine's own media processor hands what a request carries on to helpers: an input
processor prepares a request on the host, so what it passes is host data, unless a helper's
own test says otherwise (`if not x.is_cuda: return x` leaves device tensors after it)."""

import torch

from engine.runner import ModelRunner


def rope_index(grid_thw: torch.Tensor = None):
    return int(grid_thw[0, 0]) * int(grid_thw[0, 1])


def transport(tensor: torch.Tensor):
    if not tensor.is_cuda:
        return tensor
    return tensor.cpu()


class BaseMultimodalProcessor:
    def get_mm_data(self, prompt, **kwargs):
        raise NotImplementedError


class VideoProcessor(BaseMultimodalProcessor):
    def get_mm_data(self, prompt, **kwargs):
        grid = kwargs.get("grid_thw")
        features = kwargs.get("features")
        return rope_index(grid_thw=grid), transport(features)


class MediaScheduler:
    def __init__(self, runner: ModelRunner):
        self.runner = runner
        self.processor = VideoProcessor()

    def run(self, x, positions, batch, requests):
        while True:
            for request in requests:
                self.processor.get_mm_data(request.prompt, **request.meta)
            logits = self.runner.forward(x, positions, batch)
            if logits is None:
                break
