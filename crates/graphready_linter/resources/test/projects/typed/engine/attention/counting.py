"""An implementation made at run time from the one a backend names: the class derives from a
local holding what the backend class returns (`class CountingImpl(base):`; the base `Backend`
says nothing, its override returns `type[AttentionImpl]`), so a call on the layer's
implementation may run its `forward` too."""

import torch

from engine.attention.impls import Backend


def make_counting_impl(backend: type[Backend]):
    base = backend.get_impl_cls()

    class CountingImpl(base):
        def forward(self, layer, q: torch.Tensor) -> torch.Tensor:
            if q.isnan().any():
                q = torch.nan_to_num(q)
            return super().forward(layer, q)

    return CountingImpl
