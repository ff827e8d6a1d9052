"""Malformed requests: every one gets a 4xx in its dialect's error shape, and the server keeps serving."""
import json

import pytest
import requests

C, CHAT, K = "/v1/completions", "/v1/chat/completions", "/api/v1/generate"


def ok_completion(**extra):
    return dict({"model": "smollm2", "prompt": "Hi", "max_tokens": 2}, **extra)


def ok_chat(**extra):
    return dict({"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}, **extra)


def ok_kobold(**extra):
    return dict({"prompt": "Hi", "max_length": 2}, **extra)


CASES = [
    # (name, method, path, raw body bytes or JSON-able, expected status or None for any 4xx)
    ("bad json", "POST", C, b"{", 400),
    ("json array body", "POST", C, b"[1,2]", 400),
    ("json string body", "POST", C, b'"hello"', 400),
    ("empty body", "POST", C, b"", 400),
    ("invalid utf-8", "POST", C, b'{"prompt": "\xff\xfe", "max_tokens": 2}', 400),
    ("prompt number", "POST", C, {"prompt": 5, "max_tokens": 2}, 400),
    ("prompt empty list", "POST", C, {"prompt": [], "max_tokens": 2}, 400),
    ("prompt mixed list", "POST", C, {"prompt": ["a", 1], "max_tokens": 2}, 400),
    ("token id negative", "POST", C, {"prompt": [1, -5], "max_tokens": 2}, 400),
    ("token id beyond vocab", "POST", C, {"prompt": [1, 10_000_000], "max_tokens": 2}, 400),
    ("max_tokens negative", "POST", C, ok_completion(max_tokens=-1), 400),
    ("max_tokens string", "POST", C, ok_completion(max_tokens="ten"), 400),
    ("max_tokens huge", "POST", C, ok_completion(max_tokens=10**9), 400),
    ("n zero", "POST", C, ok_completion(n=0), 400),
    ("n huge", "POST", C, ok_completion(n=1000), 400),
    ("n string", "POST", C, ok_completion(n="2"), 400),
    ("temperature negative", "POST", C, ok_completion(temperature=-1), 400),
    ("temperature string", "POST", C, ok_completion(temperature="hot"), 400),
    ("top_p above one", "POST", C, ok_completion(top_p=1.5), 400),
    ("top_k string", "POST", C, ok_completion(top_k="x"), 400),
    ("min_p above one", "POST", C, ok_completion(min_p=2), 400),
    ("stop number", "POST", C, ok_completion(stop=5), 400),
    ("stop list of numbers", "POST", C, ok_completion(stop=[1, 2]), 400),
    ("logprobs too many", "POST", C, ok_completion(logprobs=50), 400),
    ("echo string", "POST", C, ok_completion(echo="yes"), 400),
    ("stream string", "POST", C, ok_completion(stream="yes"), 400),
    ("stream_options string", "POST", C, ok_completion(stream=True, stream_options="x"), 400),
    ("seed string", "POST", C, ok_completion(seed="abc"), 400),
    ("repetition_penalty zero", "POST", C, ok_completion(repetition_penalty=0), 400),
    ("presence_penalty out of range", "POST", C, ok_completion(presence_penalty=5), 400),
    ("frequency_penalty out of range", "POST", C, ok_completion(frequency_penalty=-3), 400),
    ("dry_multiplier negative", "POST", C, ok_completion(dry_multiplier=-1), 400),
    ("xtc_probability above one", "POST", C, ok_completion(xtc_probability=2), 400),
    ("logit_bias not an object", "POST", C, ok_completion(logit_bias="x"), 400),
    ("logit_bias bad key", "POST", C, ok_completion(logit_bias={"abc": 1}), 400),
    ("custom_token_bans string", "POST", C, ok_completion(custom_token_bans="abc"), 400),
    ("prompt longer than context", "POST", C, ok_completion(prompt="word " * 6000), 400),
    ("unknown model", "POST", C, ok_completion(model="gpt-17"), 404),
    ("deep json", "POST", C, b"[" * 5000 + b"]" * 5000, 400),
    ("chat without messages", "POST", CHAT, {"model": "smollm2", "max_tokens": 2}, 400),
    ("chat messages not a list", "POST", CHAT, ok_chat(messages="hi"), 400),
    ("chat message without role", "POST", CHAT, ok_chat(messages=[{"content": "hi"}]), 400),
    ("chat content number", "POST", CHAT, ok_chat(messages=[{"role": "user", "content": 5}]), 400),
    ("chat top_logprobs without logprobs", "POST", CHAT, ok_chat(top_logprobs=2), 400),
    ("chat top_logprobs too many", "POST", CHAT, ok_chat(logprobs=True, top_logprobs=30), 400),
    ("chat json_schema format", "POST", CHAT,
     ok_chat(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}), 400),
    ("chat continue without assistant", "POST", CHAT, ok_chat(continue_final_message=True,
                                                             add_generation_prompt=False), 400),
    ("unknown route", "POST", "/v1/nothing-here", {}, 404),
    ("wrong method", "GET", C, None, 405),
    ("tokenize without prompt", "POST", "/v1/tokenize", {"model": ""}, 400),
    ("detokenize tokens not a list", "POST", "/v1/detokenize", {"tokens": "abc"}, 400),
    ("kobold bad json", "POST", K, b"{nope", 400),
    ("kobold max_length string", "POST", K, ok_kobold(max_length="x"), 400),
    ("kobold temperature negative", "POST", K, ok_kobold(temperature=-1), 400),
    ("kobold sampler_order string", "POST", K, ok_kobold(sampler_order="x"), 400),
    ("kobold banned_tokens object", "POST", K, ok_kobold(banned_tokens={"a": 1}), 400),
    ("kobold prompt number", "POST", K, ok_kobold(prompt=7), 400),
    ("kobold tokencount prompt number", "POST", "/api/extra/tokencount", {"prompt": 7}, 400),
    ("kobold grammar unsupported", "POST", K, ok_kobold(grammar="root ::= \"a\""), 400),
]


@pytest.mark.parametrize("name,method,path,body,expected", CASES, ids=[c[0] for c in CASES])
def test_malformed_request_gets_4xx(server, name, method, path, body, expected):
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
    else:
        data = body
    r = requests.request(method, server.base + path, data=data,
                         headers={"Content-Type": "application/json"}, timeout=60)
    assert 400 <= r.status_code < 500, f"{name}: {r.status_code} {r.text[:300]}"
    if expected is not None:
        assert r.status_code == expected, f"{name}: {r.status_code} {r.text[:300]}"
    if r.status_code != 405 and r.text:
        payload = r.json()
        if path.startswith("/api/"):
            assert payload["detail"]["msg"]
        elif path.startswith("/v1/"):
            assert payload["error"]["message"]
    assert server.alive()


def test_huge_body_is_413(server):
    r = requests.post(server.base + C, data=b'{"prompt": "' + b"a" * (2 << 20) + b'"}',
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 413


def test_still_serving_after_the_table(server):
    assert len(CASES) >= 40
    r = requests.post(server.base + C, json=ok_completion(temperature=0), timeout=120)
    assert r.status_code == 200, r.text
