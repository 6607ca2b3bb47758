"""A library's generation mixin: its decode loop runs the model it is mixed into until the
sequences finish. Only the models that inherit it are decoded, and captured, by the library."""

import torch


class GenerationMixin:
    def generate(self, ids: torch.Tensor, steps: int) -> torch.Tensor:
        done = 0
        while done < steps:
            ids = self(ids)
            done += 1
        return ids
