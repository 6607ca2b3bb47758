"""A request's media item (SGLang's `MultimodalDataItem`): a few declared fields, and a
dictionary of whatever else the media processor produced, served as attributes by
`__getattr__`. The processor's outputs (grids, masks, sizes) are host tensors: an encoder that
reads them on the host waits for nothing."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import torch


@dataclass
class MediaItem:
    modality: str
    feature: Optional[torch.Tensor] = None
    model_specific_data: Dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name in self.model_specific_data:
            return self.model_specific_data[name]
        raise AttributeError(name)


class GridVisionTower(torch.nn.Module):
    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        # Real-world false positives (SGLang's vision towers): the grid is the processor's.
        sizes = (grid_thw[:, 1] * grid_thw[:, 2]).tolist()
        first = int(grid_thw[0, 0])
        # The pixels are on the device: a real sync.
        kept = int(x.abs().sum())
        return x[: kept + first + len(sizes)]


class GridVisionModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = GridVisionTower()

    def get_image_feature(self, items: List[MediaItem]) -> torch.Tensor:
        pixel_values = torch.cat([item.feature for item in items], dim=0)
        grid_thw = torch.concat([item.patch_grid for item in items], dim=0)
        return self.visual(pixel_values, grid_thw=grid_thw)

    def forward(self, input_ids: torch.Tensor, items: List[MediaItem]) -> torch.Tensor:
        for _, item in enumerate(items):
            # Host sizes the processor made: no sync.
            if item.crop_sizes.prod().item() == 0:
                return input_ids
            # Read from the dictionary itself: the same host data.
            if item.model_specific_data["frames"].sum().item() == 0:
                return input_ids
        return embed_routine(input_ids, items, self.get_image_feature)


def embed_routine(input_ids: torch.Tensor, items: List[MediaItem], embed) -> torch.Tensor:
    # The engine hands the model's embedding function on as a value.
    return embed(items)
