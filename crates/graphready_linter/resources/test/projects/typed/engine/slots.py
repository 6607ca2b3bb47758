"""Per-slot state a request's arrival resets, on the host path of every step that admits one.
The constructor, which says each buffer's rank, is set-up: nothing the step runs reaches it.
A helper whose parameter only a host tensor says anything of reads host memory."""

import torch

from engine.media import token_positions


class SlotStates:
    def __init__(self, slots: int, width: int, hidden: int):
        self.embeds = torch.zeros(slots, width, hidden, device="cuda")
        self.steps = torch.zeros(slots, dtype=torch.int32, device="cuda")

    def reset(self, slot: int, lengths: torch.Tensor) -> torch.Tensor:
        # A row of a 3-D buffer: the scalar is a fill kernel's argument, no copy.
        self.embeds[slot] = 0
        # One element of a 1-D buffer: a host scalar copied to the device.
        self.steps[slot] = 0
        return token_positions(lengths)


class SlotRunner:
    def __init__(self, states: SlotStates, graph: torch.cuda.CUDAGraph, pool):
        self.states = states
        self.graph = graph
        self.pool = pool

    def step(self, slot: int, lengths: torch.Tensor):
        self.states.reset(slot, lengths)
        self.graph.replay()
        # One site passes a host tensor, the other a value of a type nothing says: the host
        # tensor decides where `lens` lives, and its `.tolist()` reads host memory.
        counts(torch.tensor([slot]))
        counts(self.pool.lookup(slot))


def counts(lens: torch.Tensor) -> list:
    return lens.tolist()
