"""A diffusion pipeline's configuration prepares rotary tables once per request, before the
denoising loop, by calling the rotary embedding it is handed: `rotary_emb.forward(ids)` runs
a submodule, not the model, so the helper and the stage that calls it before its loop are no
per-step code. The loop's model call is the step."""

import torch


class PipelineConfig:
    def get_freqs(self, ids: torch.Tensor, rotary_emb) -> torch.Tensor:
        cos, sin = rotary_emb.forward(ids)
        # Once per request: no step runs this.
        return cos[: int(ids.max())] + sin


class RotaryStage:
    def __init__(self, config: PipelineConfig, transformer: torch.nn.Module, rotary):
        self.config = config
        self.model = transformer
        self.rotary = rotary

    def prepare(self, ids: torch.Tensor) -> torch.Tensor:
        freqs = self.config.get_freqs(ids, self.rotary)
        # Once per request, before the loop.
        return freqs[: int(freqs.sum())]

    def forward(self, latents: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        freqs = self.prepare(ids)
        for _ in range(4):
            latents = self.model(latents, freqs)
            # Every timestep: per-step host code.
            if latents.isnan().any():
                break
        return latents
