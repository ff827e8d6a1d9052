"""Starts aphrodited on the CPU with the default model for the whole session."""
import os
import socket
import subprocess
import tempfile
import time

import pytest
import requests

SOURCE = os.environ.get("APH_SOURCE_DIR", os.getcwd())
BUILD = os.environ.get("APH_BUILD_DIR", os.path.join(SOURCE, "build"))
MODEL = os.path.join(SOURCE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, extra_toml="", api_keys=()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.dir = tempfile.mkdtemp(prefix="aph-e2e-")
        keys = ", ".join(f'"{k}"' for k in api_keys)
        self.config = os.path.join(self.dir, "aphrodite.toml")
        with open(self.config, "w") as f:
            f.write(f"""
[model]
path = "{MODEL}"
served_model_name = "smollm2"
max_model_len = 2048

[server]
host = "127.0.0.1"
port = {self.port}
api_keys = [{keys}]
max_body_bytes = 1048576
{extra_toml}

[engine]
device = "cpu"
max_num_seqs = 16
max_num_batched_tokens = 1024
cpu_kv_cache_bytes = 134217728

[plugins]
dirs = ["{os.path.join(BUILD, 'plugins')}"]

[logging]
level = "info"
""")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "bin", "aphrodited"), "--config", self.config],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=SOURCE)
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("aphrodited exited early:\n" + self.read_log())
            try:
                if requests.get(self.base + "/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise RuntimeError("aphrodited did not become healthy:\n" + self.read_log())

    def read_log(self):
        self.log.flush()
        with open(os.path.join(self.dir, "server.log")) as f:
            return f.read()[-20000:]

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.log.close()


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    assert s.alive(), "the server died during the tests:\n" + s.read_log()
    s.stop()


@pytest.fixture(scope="session")
def keyed_server():
    s = Server(api_keys=("sk-first", "sk-second"))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def legacy_server():
    s = Server(api_keys=("sk-first",), extra_toml="kobold_routes_open = true")
    yield s
    s.stop()


def metric(server, name):
    """The value of an unlabelled (or first) sample of a Prometheus metric."""
    text = requests.get(server.base + "/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"metric {name} missing from /metrics:\n{text[:2000]}")
