"""A scheduler that serves in one of several modes, each with its own loop: the class's own
loop, and a mode a mixin in another module adds. A step both loops call every iteration is
shown under the class's own loop, the one that runs under the defaults."""

import torch

from engine.pipelined import PipelinedModeMixin


class ModeScheduler(PipelinedModeMixin):
    def __init__(self, model):
        self.model = model

    def run_batch(self, batch: torch.Tensor) -> torch.Tensor:
        return self.model(batch)

    def process_result(self, result: torch.Tensor) -> list:
        # Every step: the chain starts at ModeScheduler.event_loop.
        return result.tolist()

    def event_loop(self, batches: list):
        for batch in batches:
            result = self.run_batch(batch)
            self.process_result(result)
