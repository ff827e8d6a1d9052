"""The real default model on the CPU: a greedy request gives the same text and
bit-identical logprobs alone and among many at once (issue 5's batch
invariance, through the server: prefill chunks, the batched decode, the
GGUF linear's direct and unpacked paths, the attention's splits)."""
from concurrent.futures import ThreadPoolExecutor

import requests

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "The three primary colors are",
    "In 1969, the first person to walk on the moon was",
    "My favourite recipe for pancakes starts with",
    "The quick brown fox",
    "Water boils at a temperature of",
    "Dear diary, today I learned that",
    "The main difference between a cat and a dog is",
    "To be or not to be,",
    "A haiku about autumn:\n",
    "The largest planet in our solar system is",
    "import numpy as np\nx =",
    "Translate to French: good morning ->",
    "The knight drew his sword and",
]


def complete(server, prompt):
    r = requests.post(server.base + "/v1/completions", timeout=300, json={
        "model": "smollm2", "prompt": prompt, "max_tokens": 12, "temperature": 0,
        "ignore_eos": True, "logprobs": 1})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    return choice["text"], choice["logprobs"]["token_logprobs"]


def test_greedy_alone_equals_all_at_once(server):
    alone = [complete(server, p) for p in PROMPTS]
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        together = list(pool.map(lambda p: complete(server, p), PROMPTS))
    for prompt, (text_a, lp_a), (text_b, lp_b) in zip(PROMPTS, alone, together):
        assert text_a == text_b, f"{prompt!r}: {text_a!r} alone, {text_b!r} in the batch"
        # Exact: the CPU path sums in one fixed order whatever the batch.
        assert lp_a == lp_b, f"{prompt!r}: logprobs differ between alone and batched"
