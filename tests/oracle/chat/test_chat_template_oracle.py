"""Oracle test: every fixture chat template x every conversation must render
byte-identically in aphrodited's interpreter and in Python's jinja2
configured as HF transformers configures it. When jinja2 raises, ours must
fail with the same message."""

import datetime
import json
import os
import pathlib
import subprocess
import sys

import jinja2
import jinja2.ext
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from conversations import conversations  # noqa: E402

SOURCE_DIR = pathlib.Path(os.environ.get("APH_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))
BUILD_DIR = pathlib.Path(os.environ.get("APH_BUILD_DIR", SOURCE_DIR / "build"))
FIXTURES = (SOURCE_DIR / ".." / "shared" / "fixtures" / "chat-templates").resolve()
TOOL = BUILD_DIR / "bin" / "aph_render_template"
FIXED_DATE = "2024-07-26T13:45:00"
FIXED_NOW = datetime.datetime(2024, 7, 26, 13, 45, 0)


def hf_environment():
    """transformers' _compile_jinja_template, with the clock pinned."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


TEMPLATES = sorted(FIXTURES.glob("*.jinja"))
CONVERSATIONS = conversations()
CASES = [(t, name) for t in TEMPLATES for name in CONVERSATIONS]


def jinja2_render(env, template_path, context):
    try:
        template = env.from_string(template_path.read_text(encoding="utf-8"))
        return True, template.render(**context)
    except Exception as e:  # every failure is compared by message
        return False, str(e)


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is not built")
    cases = [{"template": str(t), "context": CONVERSATIONS[name]} for t, name in CASES]
    path = tmp_path_factory.mktemp("chat") / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    env = dict(os.environ, APH_FIXED_DATE=FIXED_DATE)
    proc = subprocess.run([str(TOOL), "--batch", str(path)], capture_output=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    results = json.loads(proc.stdout.decode("utf-8"))
    assert len(results) == len(CASES)
    return {case: result for case, result in zip(CASES, results)}


@pytest.fixture(scope="module")
def env():
    return hf_environment()


def test_fixture_set_is_complete():
    assert len(TEMPLATES) >= 37, f"expected the 37 fixture templates in {FIXTURES}"


@pytest.mark.parametrize("template,conversation", CASES,
                         ids=[f"{t.stem}-{c}" for t, c in CASES])
def test_matches_jinja2(ours, env, template, conversation):
    ok, expected = jinja2_render(env, template, CONVERSATIONS[conversation])
    got = ours[(template, conversation)]
    if ok:
        assert got["ok"], f"jinja2 rendered but we failed: {got.get('error')}"
        assert got["output"] == expected
    else:
        assert not got["ok"], f"jinja2 raised {expected!r} but we rendered:\n{got['output']}"
        assert got["error"].endswith(expected), f"error differs: ours {got['error']!r}, jinja2 {expected!r}"
