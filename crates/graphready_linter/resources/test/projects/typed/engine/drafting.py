"""A model state may swap in its own sampler once the model is loaded: the runner unpacks the
pair the state's hook returns into two of its fields, and samples with whichever sampler it got,
every step. The hook's annotation (`tuple[Any, Any] | None`) names no class; what it returns
does. The runner gets its state from a factory that asks the loaded model (any `nn.Module`) for
its state class and constructs it: the classes the models' hooks return are what it builds."""

from typing import Any

import torch
from torch import nn

from engine.model import Model


class Sampler:
    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.argmax(-1)


class DraftSlots:
    def __init__(self):
        self.canvas = torch.zeros(8, 4, device="cuda", dtype=torch.long)

    def fill_slots(self, slots: torch.Tensor) -> None:
        # Every step: the host reads how many slots to fill.
        count = slots.sum().item()
        self.canvas[:count] = 0


class DraftSampler:
    def __init__(self, sampler: Any, slots: DraftSlots | None = None):
        self.sampler = sampler
        self.slots = slots

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        slots = self.slots
        slots.fill_slots(logits.argmax(-1))
        return logits.argmax(-1)


class ModelState:
    def custom_sampler(self, sampler: Any) -> tuple[Any, Any] | None:
        return None


class DefaultState(ModelState):
    pass


class DraftState(ModelState):
    def __init__(self):
        self.slots = DraftSlots()

    def custom_sampler(self, sampler: Any) -> tuple[Any, Any] | None:
        return DraftSampler(sampler, self.slots), None


class DraftModel(nn.Module):
    @staticmethod
    def get_state_cls():
        return DraftState

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def make_state(model: nn.Module):
    if hasattr(model, "get_state_cls"):
        cls = model.get_state_cls()
        return cls()
    return DefaultState()


class DraftRunner:
    def __init__(self, model: Model, loaded: nn.Module):
        self.model = model
        self.state = make_state(loaded)
        self.sampler: Sampler | None = None
        self.verifier = None

    def load_model(self):
        self.sampler = Sampler()
        custom = self.state.custom_sampler(self.sampler)
        if custom:
            self.sampler, self.verifier = custom

    def run(self, x, positions, batch):
        while True:
            logits = self.model(x, positions, batch)
            self.sampler(logits)
