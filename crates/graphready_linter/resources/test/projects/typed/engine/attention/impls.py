"""Attention implementations chosen at run time: a layer holds `backend.get_impl_cls()(...)`."""

import torch


class AttentionImpl:
    def forward(self, layer, q: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class PagedImpl(AttentionImpl):
    def forward(self, layer, q: torch.Tensor) -> torch.Tensor:
        pages = int(q.sum())
        return q * pages


class Backend:
    @staticmethod
    def get_impl_cls():
        # Says nothing itself: what the overrides return is what a `Backend` may return.
        raise NotImplementedError


class ImplBackend(Backend):
    @staticmethod
    def get_impl_cls() -> type["AttentionImpl"]:
        return PagedImpl
