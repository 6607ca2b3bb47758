"""A generative model and a classifier the generation loop never decodes: the classifier runs
eagerly, once per call; the blocks a model holds are parts of whichever model runs them. A
model that cannot be compiled whole is decoded eagerly too. A task model wrapping what a
decoded model wraps (a sequence classifier beside a causal LM) is a task of its own, no part of
the decoded one: no entry, nor are the parts only it holds."""

import torch
from torch import nn

from generative.generation import GenerationMixin


class PreTrainedModel(nn.Module):
    _can_compile_fullgraph: bool = False


class Block(nn.Module):
    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden * hidden.max().item()


class CausalLM(PreTrainedModel, GenerationMixin):
    _can_compile_fullgraph = True

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.sum().item() < 0:
            return ids
        return ids


class EagerLM(PreTrainedModel, GenerationMixin):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return ids * ids.max().item()


class Classifier(nn.Module):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return ids * ids.sum().item()


class Matcher(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits * logits.argmax().item()


class MatchingLoss(nn.Module):
    # A training loss holding its matcher: no part of a model the loop decodes.
    def __init__(self):
        super().__init__()
        self.matcher = Matcher()


class ScoreHead(nn.Module):
    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden * hidden.min().item()


class CausalLMForSequenceClassification(PreTrainedModel):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.score = ScoreHead()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.score(ids) * ids.sum().item()
