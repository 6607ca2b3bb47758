"""Logits computed every step through a head module that another module defines: the head's
instance comes from the constructor, which nothing reaches, so the file is typed again with the
project's module classes."""

import torch

from engine.head import LogitsHead


class LogitsComputer:
    def __init__(self, banned: list[int]):
        self.head = LogitsHead()
        self.banned = banned

    def compute_logits(self, hidden: torch.Tensor):  # graphready: step
        logits = self.head(hidden)
        logits[:, self.banned] = float("-inf")
        return logits
