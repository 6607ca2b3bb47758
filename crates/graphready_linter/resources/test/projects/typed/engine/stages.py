"""A pipeline of stages: the base's `__call__` runs each stage's `forward`. One stage runs a
model, once per request; the others prepare and export. The base dispatching to every stage is
the object's call protocol, not a step: only the stage that runs the model is one."""

import torch


class Stage:
    def __call__(self, batch: torch.Tensor) -> torch.Tensor:
        return self.forward(batch)

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class GenerateStage(Stage):
    def __init__(self, model):
        self.model = model

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        ids = self.model(batch)
        # Runs the model outside the graph: per-step host code.
        return ids[: int(ids.argmax())]


class ExportStage(Stage):
    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        # Runs once per request, after the steps: reported only with --scope all.
        return batch[: int(batch.sum())]
