"""A backend whose graphs hold decode batches only (as serving engines capture them): what it
does for prefill work runs eagerly, on every step that has some, outside the graph."""

import torch

from engine.attention.base import AttentionBackend


class ChunkedBackend(AttentionBackend):
    def init_cuda_graph_state(self, max_bs):
        self.graph_bs = max_bs

    def forward(self, q, batch):
        if batch.num_prefills == 0:
            return self.forward_decode(q, batch)
        # Prefill work from here on: a stall every such step, not a capture failure.
        total = int(batch.extend_seq_lens.sum())
        # A fill with a value read from the device is frozen only inside a graph.
        pad = torch.full((4,), total, device=q.device)
        return self._prefill(q[:total] + pad.sum(), batch)

    def forward_decode(self, q, batch):
        if batch.forward_mode.is_mixed():
            # Mixed batches: the prefill part, eagerly.
            self._prefill_tail(batch)
        elif batch.forward_mode.is_extend():
            # Extend batches are prefill work under the default configuration: the verify
            # batches that are extend batches too (and captured) come with speculative decoding.
            q = q[batch.seq_lens.argmax().item()]
        needs_images = not batch.forward_mode.is_decode() and batch.contains_mm_inputs()
        if needs_images:
            self._embed_images(batch)
        # Named for prefill work: it does that work wherever it is called (the engine calls
        # it only for batches that have some).
        self.plan_chunked_prefill(batch)
        self._shard(batch) or self._mixed(q, batch.plan) or self._images(batch)
        self._pool(batch) or self._lengths(batch) or self._other_parts(batch)
        return q

    def _prefill(self, q, batch):
        if batch.seq_lens.max().item() > 4096:
            q = q * 0.5
        return q

    def _prefill_tail(self, batch):
        return batch.extend_seq_lens.tolist()

    def _embed_images(self, batch):
        return batch.seq_lens.nonzero()

    def plan_chunked_prefill(self, batch):
        return batch.extend_seq_lens.cpu()

    def _shard(self, batch):
        if not batch.forward_mode.is_extend_or_draft_extend_or_mixed():
            return None
        # Extend modes alone from here on.
        return batch.extend_seq_lens.tolist()

    def _pool(self, batch):
        if batch.extend_seq_lens is None:
            return None
        # Extend data is set only for batches that extend their requests: prefill work.
        return batch.seq_lens.tolist()

    def _mixed(self, q, plan):
        has_mixed_prefill, split = plan
        if not has_mixed_prefill:
            return q
        # The batch has prefill work (`has_..._prefill`): this runs eagerly.
        return q[: split[-1].item()]

    def _images(self, batch):
        if batch.contains_image_inputs():
            # New images come with a prompt: prefill work.
            return batch.seq_lens.tolist()
        return None

    def _lengths(self, batch):
        # Runs before the batch's extend data is read: in decode too.
        width = batch.seq_lens.max().item()
        # Reads extend data unguarded (`None` in decode): from here on, extend work.
        total = int(batch.extend_seq_lens.sum())
        return batch.seq_lens[:total].tolist(), width

    def _other_parts(self, batch):
        # A draft model's extend is captured, with speculative decoding.
        self.forward_draft_extend(batch)
        # Named for extend work (prefill on a cached prefix): eagerly, wherever it is called.
        return self.gather_cache_for_extend(batch)

    def forward_draft_extend(self, batch):
        return batch.seq_lens.tolist()

    def gather_cache_for_extend(self, batch):
        return batch.extend_seq_lens.tolist()
