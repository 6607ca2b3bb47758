"""Logits processors held in a `list` subclass that calls each in turn: what it holds is what
the project appends to it where the list is built."""

import torch


class Processor:
    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        return scores


class NGramBlocker(Processor):
    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        banned = scores.argmax(-1).tolist()
        scores[:, banned] = 0.0
        return scores


class ProcessorList(list):
    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        for processor in self:
            scores = processor(scores)
        return scores


def build_processors() -> ProcessorList:
    processors = ProcessorList()
    processors.append(NGramBlocker())
    return processors


def sample_step(scores: torch.Tensor, processors: ProcessorList):  # graphready: step
    return processors(scores)
