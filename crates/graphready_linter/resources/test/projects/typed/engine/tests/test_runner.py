"""A measuring harness: it replays and syncs on purpose."""

import torch


def test_masks(model, masks):
    assert model.masks_4d(masks) is None


def test_replay_is_fast(graph, out):
    graph.replay()
    torch.cuda.synchronize()
    assert out.sum().item() > 0


class FakeLanguageModel:
    """A test's stand-in, unrelated to the engine's classes: the runner's call of
    `embed_tokens` on the model it holds still runs the one hierarchy the engine defines."""

    def embed_tokens(self, ids):
        return ids
