"""expect-ready: transformers' `LlamaForCausalLM` decode step on a `StaticCache`.

A tiny random model built from `LlamaConfig` (no weights downloaded), sdpa attention, bf16, a
5-token prefill in the factory, then one decode token per step. Every step writes the cache's
keys and values and advances each layer's `cumulative_length`: the probe finds those storages in
the warm-up and restores them before every judged run, so eager, replay and replay after new
token ids are compared from the same state, and timing never runs off the end of the cache.

Needs transformers (5.x): `pip install transformers`.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

from graphready import ProbeTarget

VOCAB = 512
PREFILL = 5
MAX_CACHE = 64


def factory(bucket: int) -> ProbeTarget:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=MAX_CACHE,
        attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    cache = StaticCache(config=config, max_cache_len=MAX_CACHE)
    prompt = torch.randint(0, VOCAB, (bucket, PREFILL), device="cuda")
    with torch.no_grad():
        model(input_ids=prompt, past_key_values=cache, use_cache=True)  # allocates the cache
    ids = torch.randint(0, VOCAB, (bucket, 1), device="cuda")
    positions = torch.full((bucket, 1), PREFILL, device="cuda")

    def step(ids, positions):
        with torch.no_grad():
            out = model(input_ids=ids, position_ids=positions, past_key_values=cache, use_cache=True)
        return out.logits

    def make_inputs():
        return [torch.randint(0, VOCAB, (bucket, 1), device="cuda"), positions.clone()]

    return ProbeTarget(
        step=step,
        inputs=[ids, positions],
        make_inputs=make_inputs,
        name=f"llama-static-cache-b{bucket}",
        batch_dim=0,
    )
