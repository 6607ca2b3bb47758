"""A measuring harness: it replays and syncs on purpose."""

import torch


def test_replay_is_fast(graph, out):
    graph.replay()
    torch.cuda.synchronize()
    assert out.sum().item() > 0
