"""A plan built from the batch's counts. `ForwardBatch` annotates `num_scheduled` as a NumPy
array: read through a parameter of that class, it is a host value; `seq_lens` is a tensor."""

import torch

from engine.batch import ForwardBatch


def plan_step(batch: ForwardBatch) -> tuple:  # graphready: step
    widest = batch.num_scheduled.max().item()
    longest = batch.seq_lens.max().item()
    return widest, longest, torch.tensor(0)
