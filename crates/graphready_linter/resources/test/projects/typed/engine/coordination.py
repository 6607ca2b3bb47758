"""Data-parallel coordination: every rank's token count, gathered in host memory and returned
beside two host values, or `None` without data parallelism."""

import torch


def coordinate_ranks(num_tokens: int, dp_size: int) -> tuple[bool, torch.Tensor | None, int]:
    if dp_size == 1:
        return False, None, 0
    across = torch.full((dp_size,), num_tokens, dtype=torch.int32)
    return True, across, 1
