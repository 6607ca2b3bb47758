"""A multimodal model's forward: encoder outputs handed over in a dict, and an audio model's
`input_features` (or raw `input_values`), come with a request's prompt only (generation drops
them after the first step), so what they guard runs eagerly, once per request, outside the
decode graph."""

import torch
from torch import nn


class OmniChatLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)

    def forward(self, input_ids: torch.Tensor, input_features=None, input_values=None, mm_encoder_outputs=None):
        embeds = self.embed(input_ids)
        mm_encoder_outputs = mm_encoder_outputs if mm_encoder_outputs is not None else {}
        if mm_encoder_outputs.get("image") is not None:
            images = (input_ids == 5).sum().item()
            embeds = embeds * images
        if input_features is not None:
            frames = (input_ids == 6).sum().item()
            embeds = embeds * frames
        if input_values is not None:
            samples = (input_ids == 7).sum().item()
            embeds = embeds * samples
        padding = (input_ids == 0).sum().item()
        return embeds * padding
