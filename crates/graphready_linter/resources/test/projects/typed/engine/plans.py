"""A plan built from the batch's counts. `ForwardBatch` annotates `num_scheduled` as a NumPy
array: read through a parameter of that class, it is a host value; `seq_lens` is a tensor. An
override that leaves the parameter unannotated takes the annotation of the method it overrides.
A helper of another module given the host lengths returns host lengths."""

import torch

from engine.batch import ForwardBatch
from engine.lens import local_lens


def plan_step(batch: ForwardBatch) -> tuple:  # graphready: step
    widest = batch.num_scheduled.max().item()
    longest = batch.seq_lens.max().item()
    # Host lengths in, host lengths out: nothing waits here.
    split = local_lens(torch.from_numpy(batch.num_scheduled), 2).tolist()
    return widest, longest, torch.tensor(0), split


class Planner:
    def plan(self, batch: ForwardBatch) -> int:
        raise NotImplementedError


class WidestPlanner(Planner):
    def plan(self, batch) -> int:  # graphready: step
        # The override leaves `batch` unannotated: the method it overrides says what it is.
        return batch.num_scheduled.max().item()
