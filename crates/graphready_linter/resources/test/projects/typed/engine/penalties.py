"""Penalizers held in a dict built by a comprehension from the classes the orchestrator is given
(`{P: P(self) for P in penalizers}`), applied every step through `.values()`."""

from typing import Set, Type

import torch


class Penalizer:
    def __init__(self, orchestrator):
        self.orchestrator = orchestrator

    def apply(self, logits: torch.Tensor):
        self._apply(logits)

    def _apply(self, logits: torch.Tensor):
        raise NotImplementedError


class MinTokensPenalizer(Penalizer):
    def _apply(self, logits: torch.Tensor):
        mask = logits > 0
        logits[mask] += 1.0


class Orchestrator:
    def __init__(self, penalizers: Set[Type[Penalizer]]):
        self.penalizers = {P: P(self) for P in penalizers}
        self.names = [p.__name__ for p in penalizers]

    def apply(self, logits: torch.Tensor):  # graphready: step
        for penalizer in self.penalizers.values():
            penalizer.apply(logits)
