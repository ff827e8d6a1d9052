"""Auth, CORS, request ids, metrics and cancel-on-disconnect."""
import socket
import json
import time

import openai
import pytest
import requests

from conftest import metric


def test_auth_required_on_every_route(keyed_server):
    base = keyed_server.base
    for method, path in [("GET", "/v1/models"), ("POST", "/v1/completions"), ("GET", "/api/v1/model"),
                         ("GET", "/metrics"), ("POST", "/api/extra/tokencount")]:
        r = requests.request(method, base + path, json={})
        assert r.status_code == 401, (path, r.status_code)
    assert requests.get(base + "/v1/models", headers={"Authorization": "Bearer sk-first"}).status_code == 200
    assert requests.get(base + "/v1/models", headers={"X-API-KEY": "sk-second"}).status_code == 200
    assert requests.get(base + "/v1/models", headers={"Authorization": "Bearer sk-firs"}).status_code == 401
    assert requests.get(base + "/api/v1/model", headers={"Authorization": "Bearer sk-first"}).status_code == 200


def test_401_shapes_per_dialect(keyed_server):
    r = requests.get(keyed_server.base + "/v1/models")
    assert r.json()["error"]["message"]
    r = requests.get(keyed_server.base + "/api/v1/model")
    assert r.json()["detail"]["type"] == "unauthorized"


def test_sdk_authentication_error(keyed_server):
    client = openai.OpenAI(base_url=keyed_server.base + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.models.list()


def test_legacy_switch_opens_only_kobold(legacy_server):
    assert requests.get(legacy_server.base + "/api/v1/model").status_code == 200
    assert requests.get(legacy_server.base + "/v1/models").status_code == 401


def test_cors_preflight(server):
    r = requests.options(server.base + "/api/v1/generate", headers={
        "Origin": "https://lite.koboldai.net", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert r.status_code in (200, 204)
    assert r.headers["Access-Control-Allow-Origin"] in ("*", "https://lite.koboldai.net")
    allowed = r.headers["Access-Control-Allow-Headers"].lower()
    assert "authorization" in allowed and "content-type" in allowed


def test_request_id_header(server):
    r = requests.get(server.base + "/v1/models")
    assert r.headers.get("X-Request-Id")


def test_metrics_counters(server):
    before = metric(server, "aphrodite:generation_tokens_total")
    requests.post(server.base + "/v1/completions", json={"prompt": "Hi", "max_tokens": 3, "temperature": 0,
                                                          "ignore_eos": True}, timeout=120)
    assert metric(server, "aphrodite:generation_tokens_total") >= before + 3
    text = requests.get(server.base + "/metrics").text
    for name in ["aphrodite:num_requests_running", "aphrodite:num_requests_waiting",
                 "aphrodite:kv_cache_usage_perc", "aphrodite:prompt_tokens_total",
                 "aphrodite:prefix_cache_queries_total", "aphrodite:prefix_cache_hits_total",
                 "aphrodite:num_preemptions_total", "aphrodite:time_to_first_token_seconds_bucket",
                 "aphrodite:inter_token_latency_seconds_bucket", "aphrodite:e2e_request_latency_seconds_bucket"]:
        assert name in text, name


def wait_running_zero(server, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metric(server, "aphrodite:num_requests_running") == 0 and \
                metric(server, "aphrodite:num_requests_waiting") == 0:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("stream", [True, False])
def test_disconnect_cancels(server, stream):
    body = json.dumps({"prompt": "Write a very long story.", "max_tokens": 1500, "temperature": 0.8,
                       "ignore_eos": True, "stream": stream}).encode()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    deadline = time.time() + 30
    while metric(server, "aphrodite:num_requests_running") < 1 and time.time() < deadline:
        time.sleep(0.05)
    if stream:
        s.recv(100)
    s.close()
    assert wait_running_zero(server), "the request kept running after the client left"
