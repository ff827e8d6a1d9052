"""SSE bytes exactly as CLIENTS.md says the SDKs, SillyTavern and Kobold Lite parse them."""
import json
import re
import socket


def raw_post(server, path, body, headers=()):
    """Sends one HTTP/1.1 request and returns (status line, headers, decoded body bytes)."""
    payload = json.dumps(body).encode()
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}", "Content-Type: application/json",
            f"Content-Length: {len(payload)}", "Connection: close", *headers, "", ""]
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall("\r\n".join(head).encode() + payload)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    header_blob, _, body_bytes = data.partition(b"\r\n\r\n")
    lines = header_blob.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        decoded, rest = b"", body_bytes
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            decoded += rest[:size]
            rest = rest[size + 2:]
        body_bytes = decoded
    return lines[0], headers, body_bytes


def test_openai_completion_stream_bytes(server):
    status, headers, body = raw_post(server, "/v1/completions", {
        "model": "smollm2", "prompt": "Hi", "max_tokens": 5, "temperature": 0, "stream": True})
    assert " 200 " in status
    assert headers["content-type"].startswith("text/event-stream")
    text = body.decode()
    assert text.endswith("data: [DONE]\n\n")
    events = text.split("\n\n")[:-1]
    assert events[-1] == "data: [DONE]"
    for event in events[:-1]:
        assert event.startswith("data: ") and "\n" not in event, repr(event)
        assert "event:" not in event
        chunk = json.loads(event[len("data: "):])
        assert chunk["object"] == "text_completion"
        assert len(chunk["choices"]) == 1
    assert json.loads(events[-2][6:])["choices"][0]["finish_reason"] in ("stop", "length")


def test_openai_chat_stream_bytes_with_usage(server):
    _, _, body = raw_post(server, "/v1/chat/completions", {
        "model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
        "temperature": 0, "stream": True, "stream_options": {"include_usage": True}})
    events = body.decode().split("\n\n")[:-1]
    assert events[-1] == "data: [DONE]"
    usage = json.loads(events[-2][6:])
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0
    first = json.loads(events[0][6:])
    assert first["choices"][0]["delta"]["role"] == "assistant"
    for event in events[1:-2]:
        assert json.loads(event[6:])["usage"] is None


def test_kobold_stream_matches_lite_regex(server):
    _, headers, body = raw_post(server, "/api/extra/generate/stream", {
        "prompt": "\nUser: Hello\nKoboldAI:", "max_length": 6, "temperature": 0, "genkey": "KCPP1234"})
    assert headers["content-type"].startswith("text/event-stream")
    text = body.decode()
    pattern = re.compile(r"^event: (.*)\ndata: (.*)(\r?\n){2}")
    tokens, finish = [], None
    while text:
        m = pattern.match(text)
        assert m, f"Lite's regex fails at {text[:120]!r}"
        assert m.group(1) == "message"
        data = json.loads(m.group(2))
        tokens.append(data["token"])
        finish = data["finish_reason"] or finish
        text = text[m.end():]
    assert finish in ("stop", "length")
    assert "".join(tokens)
