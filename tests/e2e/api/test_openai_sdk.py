"""The real openai Python SDK against the server: every call shape a client uses."""
import openai
import pytest


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="EMPTY", max_retries=0, timeout=120)


def test_models_list_and_retrieve(client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["smollm2"]
    assert client.models.retrieve("smollm2").id == "smollm2"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_completion_greedy_is_deterministic(client):
    a = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=8, temperature=0)
    b = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=8, temperature=0)
    assert a.choices[0].text == b.choices[0].text
    assert a.choices[0].text.strip() != ""
    assert a.choices[0].finish_reason in ("stop", "length")
    assert a.usage.completion_tokens <= 8
    assert a.usage.total_tokens == a.usage.prompt_tokens + a.usage.completion_tokens


def test_completion_length_finish_reason(client):
    r = client.completions.create(model="smollm2", prompt="Once upon a time", max_tokens=5,
                                  temperature=0, extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 5


def test_completion_stream_matches_non_stream(client):
    full = client.completions.create(model="smollm2", prompt="Hello, my name is", max_tokens=12, temperature=0)
    chunks = list(client.completions.create(model="smollm2", prompt="Hello, my name is", max_tokens=12,
                                            temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == full.choices[0].text
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_completion_n2_and_list_prompts(client):
    r = client.completions.create(model="smollm2", prompt=["A", "B"], n=2, max_tokens=4, temperature=0.8, seed=3)
    assert sorted(c.index for c in r.choices) == [0, 1, 2, 3]


def test_completion_echo_and_logprobs(client):
    r = client.completions.create(model="smollm2", prompt="One two three", max_tokens=4, temperature=0,
                                  echo=True, logprobs=3)
    choice = r.choices[0]
    assert choice.text.startswith("One two three")
    lp = choice.logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.text_offset) == len(lp.top_logprobs)
    assert all(x <= 0 for x in lp.token_logprobs)
    assert all(len(t) <= 3 for t in lp.top_logprobs)


def test_completion_token_prompt(client):
    r = client.completions.create(model="smollm2", prompt=[504, 3575, 282], max_tokens=3, temperature=0)
    assert r.usage.prompt_tokens == 3


def test_chat_non_stream(client):
    r = client.chat.completions.create(model="smollm2", messages=[
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hi."}], max_tokens=10, temperature=0)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.object == "chat.completion"


def test_chat_stream_roles_finish_and_usage(client):
    stream = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Count to five."}],
                                            max_tokens=12, temperature=0, n=2, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    usage_chunks = [c for c in chunks if not c.choices]
    assert len(usage_chunks) == 1 and chunks[-1] is usage_chunks[0]
    assert usage_chunks[0].usage.completion_tokens > 0
    for index in (0, 1):
        mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == index]
        assert mine[0].delta.role == "assistant"
        assert mine[-1].finish_reason in ("stop", "length")
        assert all(c.finish_reason is None for c in mine[:-1])
    assert all(len(c.choices) <= 1 for c in chunks)


def test_chat_max_completion_tokens_wins(client):
    r = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Tell a story."}],
                                       max_tokens=50, max_completion_tokens=3, temperature=0,
                                       extra_body={"ignore_eos": True})
    assert r.usage.completion_tokens == 3


def test_chat_logprobs(client):
    r = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}],
                                       max_tokens=4, temperature=0, logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert all(len(e.top_logprobs) == 2 for e in content)


def test_seeded_sampling_reproducible(client):
    kwargs = dict(model="smollm2", prompt="The weather today", max_tokens=10, temperature=1.0, seed=1234)
    assert client.completions.create(**kwargs).choices[0].text == client.completions.create(**kwargs).choices[0].text


def test_errors_map_to_sdk_exceptions(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="smollm2", prompt="x", max_tokens=4, temperature=-1)
    assert "temperature" in str(e.value)
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other-model", prompt="x", max_tokens=4)
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="smollm2", prompt="word " * 5000, max_tokens=4)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="smollm2", messages=[], max_tokens=4)


def test_tokenize_and_detokenize(server):
    import requests
    r = requests.post(server.base + "/v1/tokenize", json={"model": "", "prompt": "Hello world"}).json()
    assert r["count"] == len(r["tokens"]) > 0 and r["max_model_len"] == 2048
    d = requests.post(server.base + "/v1/detokenize", json={"model": "smollm2", "tokens": r["tokens"]}).json()
    assert d["prompt"].endswith("Hello world")
