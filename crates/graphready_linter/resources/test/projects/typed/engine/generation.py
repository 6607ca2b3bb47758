"""A generation mixin: `generate` validates once and dispatches through a table of method names
to a decode loop that runs until the sequences finish. The loop's body runs every step;
`generate` itself runs once per call, although it runs the model (the prompt) too."""

import torch

DECODING_METHODS = {"greedy": "_greedy", "remote": "org/remote-decoding"}


class Generator:
    def __init__(self, model):
        self.model = model

    def generate(self, ids: torch.Tensor, mode: str):
        if (ids < 0).any():
            raise ValueError("negative token ids")
        prompt = self.model(ids)
        decoding_method = getattr(type(self), DECODING_METHODS[mode])
        return decoding_method(self, prompt)

    def _greedy(self, logits: torch.Tensor):
        while True:
            logits = self.model(logits)
            if self.finished(logits):
                break
        return logits

    def finished(self, logits: torch.Tensor) -> bool:
        return bool(logits.max() > 5)
