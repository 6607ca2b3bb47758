"""A drafter that pads its batch to what every data-parallel rank agreed on: the counts come
back from another module's function as the second element of a tuple, in host memory, so
reading one is no sync."""

import torch

from engine.attention.base import AttentionBackend
from engine.batch import ForwardBatch
from engine.coordination import coordinate_ranks


class Proposer:
    def __init__(self, rank: int, dp_size: int):
        self.rank = rank
        self.dp_size = dp_size

    def propose(self, num_tokens: int, hidden: torch.Tensor):  # graphready: step
        padded = num_tokens
        should_split, across, mode = coordinate_ranks(num_tokens, self.dp_size)
        if across is not None:
            padded = int(across[self.rank].item())
        return hidden[:padded], should_split, mode

    def prepare(self, batch: ForwardBatch, backend: AttentionBackend):  # graphready: step
        # A drafter builds the metadata the runner builds too, one call closer to its entry:
        # the chains of what both reach go through the runner, the default path.
        backend.init_forward_metadata(batch)
