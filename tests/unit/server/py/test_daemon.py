"""The aphrodited process: starts without a model, answers /health and
/version, rejects bad config naming it, and exits 0 on SIGTERM/SIGINT."""
import os
import signal
import socket
import subprocess
import time

import pytest
import requests

DAEMON = os.environ["APH_DAEMON"]
FAKES = os.environ["APH_FAKE_PLUGIN_DIR"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*args):
    port = free_port()
    proc = subprocess.Popen(
        [DAEMON, "--host", "127.0.0.1", "--port", str(port), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited early: {proc.stdout.read()}")
        try:
            requests.get(f"http://127.0.0.1:{port}/version", timeout=1)
            return proc, port
        except requests.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("daemon did not start listening")


def stop(proc, sig=signal.SIGTERM):
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=20)
    return proc.returncode, out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_without_a_model_and_stops_cleanly(sig):
    proc, port = start("--model", "", "--plugin-dir", FAKES)
    base = f"http://127.0.0.1:{port}"
    health = requests.get(f"{base}/health", timeout=5)
    assert health.status_code == 503
    version = requests.get(f"{base}/version", timeout=5)
    assert version.status_code == 200 and version.json()["version"]
    # A route of the fake API plugin found in --plugin-dir.
    echo = requests.post(f"{base}/fake/fake-api", data="{}", timeout=5)
    assert echo.status_code == 200, echo.text
    rc, out = stop(proc, sig)
    assert rc == 0, out
    assert "shutting down" in out and "stopped" in out
    assert "skipped plugin" in out and "wrong ABI major 2" in out
    assert '"GET /health" 503' in out  # the access log


def test_sigterm_ends_an_open_stream_and_idle_connections():
    proc, port = start("--model", "", "--plugin-dir", FAKES, "--enable-plugin", "fake-api")
    idle = socket.create_connection(("127.0.0.1", port))
    idle.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    t0 = time.time()
    rc, out = stop(proc)
    assert rc == 0, out
    assert time.time() - t0 < 10
    idle.settimeout(5)
    assert idle.recv(4096) == b""  # closed by the server


def test_api_keys_from_the_command_line():
    proc, port = start("--model", "", "--plugin-dir", FAKES, "--api-keys", "k1", "k2")
    base = f"http://127.0.0.1:{port}"
    try:
        assert requests.get(f"{base}/version", timeout=5).status_code == 401
        ok = requests.get(f"{base}/version", headers={"Authorization": "Bearer k2"}, timeout=5)
        assert ok.status_code == 200
        assert requests.get(f"{base}/health", timeout=5).status_code == 503
    finally:
        assert stop(proc)[0] == 0


def run(*args):
    return subprocess.run([DAEMON, *args], capture_output=True, text=True, timeout=30)


def test_unknown_toml_key_is_rejected_by_name(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[engine]\nmax_num_seq = 3\n")
    r = run("--config", str(cfg))
    assert r.returncode == 2
    assert f"{cfg}: unknown key engine.max_num_seq" in r.stderr


def test_bad_flag_value_is_rejected_by_name():
    r = run("--port", "http")
    assert r.returncode == 2
    assert '--port: must be an integer (got "http")' in r.stderr


def test_port_in_use_exits_non_zero():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("--model", "", "--port", str(port), "--plugin-dir", FAKES)
        assert r.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_help_and_version():
    h = run("--help")
    assert h.returncode == 0
    for flag in ["--model", "--api-keys", "--max-num-batched-tokens", "--list-plugins", "--device"]:
        assert flag in h.stdout
    v = run("--version")
    assert v.returncode == 0 and v.stdout.startswith("aphrodited ")


def test_unknown_subcommand():
    r = run("frobnicate")
    assert r.returncode == 2
    assert 'unknown subcommand "frobnicate"' in r.stderr


def test_a_model_that_cannot_load_is_reported_by_file(tmp_path):
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a GGUF file")
    log = tmp_path / "daemon.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [DAEMON, "--host", "127.0.0.1", "--port", str(free_port()), "--model", str(bogus),
             "--plugin-dir", FAKES, "--device", "cpu"],
            stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while proc.poll() is None and time.time() < deadline:
        if "this build has no engine" in log.read_text():
            # A build without core/engine keeps serving and says why.
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
            assert str(bogus) in log.read_text()
            return
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    out = log.read_text()
    assert proc.returncode == 1, out
    assert f"model load failed ({bogus})" in out, out
