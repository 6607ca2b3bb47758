"""A speech head built on a `transformers` base class, which nothing in the engine builds.

`PreTrainedModel` is an `nn.Module`: the head running its own inner model is the model at
work, not a step the engine drives, so its methods are no step entries of their own.
"""

import torch
from transformers import PreTrainedModel


class SpeechHead(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.model = torch.nn.Linear(4, 4)

    def prefill_text(self, input_ids: torch.Tensor):
        hidden = self.model(input_ids)
        spoken = (input_ids == 7).nonzero()
        return hidden, spoken
