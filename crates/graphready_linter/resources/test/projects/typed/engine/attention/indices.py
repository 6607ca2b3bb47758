"""An updater that picks its `update` in the constructor: the instance attribute shadows the
placeholder method, so the bound method it holds is what a call runs."""

import torch


class IndicesUpdater:
    def __init__(self, sliding_window: bool):
        if sliding_window:
            self.update = self.update_sliding_window
        else:
            self.update = self.update_single

    def update(self, batch):
        raise NotImplementedError

    def update_single(self, batch):
        self.total = batch.seq_lens.sum()

    def update_sliding_window(self, batch):
        self.total = batch.seq_lens.sum().item()
