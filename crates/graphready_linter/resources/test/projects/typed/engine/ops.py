"""A layer run through a custom operator, registered as engines do so that `torch.compile`
treats the layer as opaque: `torch.ops.engine.routed_experts(...)` runs the function
registered under that name, which looks the layer up and runs its implementation. A runner
keeps the operator a method picks in a field, and calls the field."""

import torch
from torch import nn

_LAYERS: dict = {}


def direct_register_custom_op(op_name: str, op_func, fake_impl=None):
    library = torch.library.Library("engine", "FRAGMENT")
    library.define(op_name + "(Tensor x, str layer_name) -> Tensor")
    library.impl(op_name, op_func, "CUDA")


def get_layer(name: str) -> "RoutedExperts":
    return _LAYERS[name]


def _routed_experts(x: torch.Tensor, layer_name: str) -> torch.Tensor:
    return get_layer(layer_name).forward_impl(x)


def _routed_experts_fake(x: torch.Tensor, layer_name: str) -> torch.Tensor:
    return torch.empty_like(x)


direct_register_custom_op(
    op_name="routed_experts", op_func=_routed_experts, fake_impl=_routed_experts_fake
)


class RoutedExperts(nn.Module):
    def __init__(self, name: str):
        super().__init__()
        self.layer_name = name
        _LAYERS[name] = self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.engine.routed_experts(x, self.layer_name)

    def forward_impl(self, x: torch.Tensor) -> torch.Tensor:
        # Captured through the operator: the routed rows' count is data-dependent.
        return torch.nonzero(x)


def _shared_experts(x: torch.Tensor, layer_name: str) -> torch.Tensor:
    return get_layer(layer_name).shared_impl(x)


direct_register_custom_op(op_name="shared_experts", op_func=_shared_experts)


class SharedExperts(RoutedExperts):
    def __init__(self, name: str):
        super().__init__(name)
        self._forward_entry = self._select_forward()

    def _select_forward(self):
        return torch.ops.engine.shared_experts

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._forward_entry(x, self.layer_name)

    def shared_impl(self, x: torch.Tensor) -> torch.Tensor:
        # Captured through the operator the field holds.
        return torch.unique(x)



def get_module(name: str) -> nn.Module:
    return _LAYERS[name]


class RowPlanner:
    def _plan_rows(self, x: torch.Tensor) -> torch.Tensor:
        # Captured through the operator: the one class in the project that defines this private
        # method is what the looked-up module's planner can be.
        return torch.nonzero(x)

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        # A public name the project defines once may still be some library object's method:
        # not followed into the graph.
        return torch.unique(x)


def _planned_experts(x: torch.Tensor, layer_name: str) -> torch.Tensor:
    layer = get_module(layer_name)
    layer.planner.rows(x)
    return layer.planner._plan_rows(x)


direct_register_custom_op(op_name="planned_experts", op_func=_planned_experts)


class PlannedExperts(RoutedExperts):
    def __init__(self, name: str):
        super().__init__(name)
        self.planner = RowPlanner()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.engine.planned_experts(x, self.layer_name)
