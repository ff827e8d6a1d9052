"""The request bodies SillyTavern and Kobold Lite really send (CLIENTS.md), replayed verbatim."""
import requests

ST_APHRODITE_BODY = {
    "prompt": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "model": "smollm2", "max_new_tokens": 20, "max_tokens": 20, "temperature": 0.7, "top_p": 0.5,
    "typical_p": 1, "typical": 1, "sampler_seed": -1, "min_p": 0, "repetition_penalty": 1.2,
    "frequency_penalty": 0, "presence_penalty": 0, "top_k": 40, "skew": 0, "min_tokens": 0,
    "add_bos_token": True, "smoothing_factor": 0, "smoothing_curve": 1, "dry_allowed_length": 2,
    "dry_multiplier": 0.8, "dry_base": 1.75, "dry_sequence_breakers": "[\"\\n\", \":\", \"\\\"\", \"*\"]",
    "dry_penalty_last_n": 0, "max_tokens_second": 0, "stopping_strings": ["<|im_end|>", "\nUser:"],
    "stop": ["<|im_end|>", "\nUser:"], "truncation_length": 8192, "ban_eos_token": False,
    "skip_special_tokens": True, "top_a": 0, "tfs": 1, "mirostat_mode": 0, "mirostat_tau": 5,
    "mirostat_eta": 0.1, "custom_token_bans": [], "banned_strings": [], "api_type": "aphrodite",
    "api_server": "http://127.0.0.1:2242", "legacy_api": False, "xtc_threshold": 0.1, "xtc_probability": 0,
    "n": 1, "temperature_last": True, "eta_cutoff": 0, "epsilon_cutoff": 0, "ignore_eos": False,
    "spaces_between_special_tokens": True, "guided_grammar": "", "guided_json": {}, "early_stopping": False,
    "include_stop_str_in_output": False}

LITE_BODY = {
    "n": 1, "max_context_length": 12288, "max_length": 16, "rep_pen": 1.05, "temperature": 0.75, "top_p": 0.92,
    "top_k": 100, "top_a": 0, "typical": 1, "tfs": 1, "rep_pen_range": 360, "rep_pen_slope": 0.7,
    "sampler_order": [6, 0, 1, 3, 4, 2, 5], "memory": "[Persona: a friendly bot]\n", "trim_stop": True,
    "genkey": "KCPP4821", "min_p": 0, "dynatemp_range": 0, "dynatemp_exponent": 1, "smoothing_factor": 0,
    "smoothing_curve": 1, "nsigma": 0, "banned_tokens": [], "render_special": False, "logprobs": False,
    "presence_penalty": 0, "logit_bias": {}, "stop_sequence": ["\nUser:", "\nKoboldAI:"],
    "use_default_badwordsids": False, "bypass_eos": False, "prompt": "\nUser: Hello\nKoboldAI:",
    "dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": 360,
    "dry_sequence_breakers": ["\n", ":", "\"", "*"], "xtc_threshold": 0.1, "xtc_probability": 0.5}


def test_sillytavern_aphrodite_text_completion(server):
    r = requests.post(server.base + "/v1/completions", json=ST_APHRODITE_BODY,
                      headers={"X-API-KEY": "unused", "Authorization": "Bearer unused"}, timeout=120)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert "<|im_end|>" not in choice["text"]
    assert choice["finish_reason"] in ("stop", "length")


def test_sillytavern_custom_chat_with_bearer_undefined(server):
    body = {"messages": [{"role": "user", "content": "Hi"}], "model": "smollm2", "temperature": 1,
            "max_tokens": 8, "stream": False, "presence_penalty": 0, "frequency_penalty": 0, "top_p": 1,
            "logit_bias": {}}
    r = requests.post(server.base + "/v1/chat/completions", json=body,
                      headers={"Authorization": "Bearer undefined"}, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["role"] == "assistant"


def test_sillytavern_tokenize_call(server):
    r = requests.post(server.base + "/v1/tokenize", json={"model": "", "prompt": "Hello there"}).json()
    assert r["count"] == len(r["tokens"])


def test_kobold_lite_connect_sequence(server):
    base = server.base
    assert requests.get(base + "/api/v1/model").json()["result"] not in ("", "ReadOnly")
    assert requests.get(base + "/api/v1/info/version").json()["result"] >= "1.2.4"
    version = requests.get(base + "/api/extra/version").json()
    assert version["result"] == "KoboldCpp"
    major, minor = (int(x) for x in version["version"].split(".")[:2])
    assert (major, minor) >= (1, 74), "Lite must send DRY and XTC"
    assert requests.get(base + "/api/v1/config/max_context_length").json()["value"] == 2048
    assert requests.get(base + "/api/extra/true_max_context_length").json()["value"] == 2048
    assert requests.get(base + "/api/extra/preloadstory").json() == {}
    assert requests.get(base + "/api/latest/model").json()["result"]


def test_kobold_lite_generate_clamps_context(server):
    r = requests.post(server.base + "/api/v1/generate", json=LITE_BODY, timeout=120)
    assert r.status_code == 200, r.text
    result = r.json()["results"][0]
    assert result["finish_reason"] in ("stop", "length")
    assert "\nUser:" not in result["text"]
    assert result["completion_tokens"] <= 16


def test_kobold_memory_survives_truncation(server):
    body = dict(LITE_BODY, prompt="word " * 4000, memory="MEMORYMARK ", max_context_length=64, max_length=8,
                temperature=0)
    r = requests.post(server.base + "/api/v1/generate", json=body, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["prompt_tokens"] <= 64 - 8


def test_kobold_tokencount_ids_and_special(server):
    with_bos = requests.post(server.base + "/api/extra/tokencount", json={"prompt": "Hello"}).json()
    without = requests.post(server.base + "/api/extra/tokencount", json={"prompt": "Hello", "special": False}).json()
    assert with_bos["value"] == len(with_bos["ids"])
    assert without["value"] == len(without["ids"])
    assert with_bos["value"] >= without["value"]


def test_kobold_check_abort_and_perf(server):
    assert requests.post(server.base + "/api/extra/abort", data=b"").json()["done"] == "true"
    check = requests.post(server.base + "/api/extra/generate/check", json={"genkey": "KCPP0000"}).json()
    assert check["results"][0]["text"] == ""
    perf = requests.get(server.base + "/api/extra/perf").json()
    assert "total_gens" in perf
