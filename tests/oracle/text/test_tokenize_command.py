"""`aphrodited tokenize` on every vocab fixture: the GGUF through the quant
plugin's model source must reproduce the .out files byte for byte, and a
tokenizer.json built from the same vocabulary must match HF tokenizers."""
from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

from hf_from_gguf import build, save

SEP = "\n__ggml_vocab_test__\n"
ROOT = pathlib.Path(os.environ.get("APH_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))
BUILD = pathlib.Path(os.environ.get("APH_BUILD_DIR", ROOT / "build"))
PLUGINS = pathlib.Path(os.environ.get("APH_PLUGIN_DIR", BUILD / "plugins"))
FIXTURES = pathlib.Path(os.environ.get("APH_VOCAB_FIXTURES", ROOT.parent / "shared" / "fixtures" / "vocab"))
VOCABS = sorted(p.name for p in FIXTURES.glob("*.gguf") if pathlib.Path(f"{p}.out").exists())


def tokenize(model: pathlib.Path | str, stdin: bytes, *extra: str) -> subprocess.CompletedProcess:
    cmd = [str(BUILD / "bin" / "aphrodited"), "tokenize", "--model", str(model), "--plugin-dir", str(PLUGINS),
           "--log-level", "error", *extra]
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=120)


def test_fixtures_exist():
    assert len(VOCABS) >= 6, f"vocab fixtures missing in {FIXTURES}"


@pytest.mark.parametrize("vocab", VOCABS)
def test_gguf_through_the_plugin_matches_the_fixture(vocab):
    path = FIXTURES / vocab
    run = tokenize(path, path.with_name(vocab + ".inp").read_bytes(), "--split", r"\n__ggml_vocab_test__\n")
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    expected = path.with_name(vocab + ".out").read_bytes()
    got_lines, want_lines = run.stdout.split(b"\n"), expected.split(b"\n")
    mismatches = [i for i, (g, w) in enumerate(zip(got_lines, want_lines)) if g != w]
    assert not mismatches and len(got_lines) == len(want_lines), (
        f"{vocab}: {len(mismatches)} of {len(want_lines) - 1} strings differ, first at line {mismatches[:1]}")


@pytest.mark.parametrize("vocab", VOCABS)
def test_tokenizer_json_matches_hf_tokenizers(vocab, tmp_path):
    path = FIXTURES / vocab
    hf = build(str(path))
    tokenizer_json = save(hf, str(tmp_path))
    texts = path.with_name(vocab + ".inp").read_text(encoding="utf-8").split(SEP)[:-1]
    texts += ["<s>Hello</s> world", "<|endoftext|> x", "  leading and   inner   spaces ", "tab\there\r\nCRLF"]
    want = b"".join(b"".join(b" %d" % i for i in hf.encode(t, add_special_tokens=False).ids) + b"\n"
                    for t in texts)
    for model in (tokenizer_json, tmp_path):  # the file, and its directory
        # HF's encode always matches special tokens: that is --parse-special.
        run = tokenize(model, SEP.join(texts).encode() + SEP.encode(), "--split", r"\n__ggml_vocab_test__\n",
                       "--parse-special")
        assert run.returncode == 0, run.stderr.decode(errors="replace")
        got = run.stdout.split(b"\n")
        ref = want.split(b"\n")
        bad = [(texts[i], got[i], ref[i]) for i in range(len(texts)) if got[i] != ref[i]]
        assert not bad, f"{vocab}: {len(bad)} of {len(texts)} differ from HF tokenizers, first: {bad[0]}"


def test_plain_output_and_flags():
    path = FIXTURES / "ggml-vocab-llama-spm.gguf"
    plain = tokenize(path, b"Hello world")
    assert plain.returncode == 0, plain.stderr.decode(errors="replace")
    ids = plain.stdout.decode().split()
    assert plain.stdout.decode() == " ".join(ids) + "\n"
    special = tokenize(path, b"Hello world", "--add-special")
    assert special.stdout.decode().split() == ["1"] + ids
    parsed = tokenize(path, b"<s>", "--parse-special")
    assert parsed.stdout.decode().split() == ["1"]
    literal = tokenize(path, b"<s>")
    assert literal.stdout.decode().split() != ["1"]


def test_errors_are_reported_not_crashes(tmp_path):
    missing = tokenize(tmp_path / "nope.gguf", b"x")
    assert missing.returncode == 2 and b"nope.gguf" in missing.stderr
    empty_dir = tokenize(tmp_path, b"x")
    assert empty_dir.returncode == 2 and b"tokenizer.json" in empty_dir.stderr
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    broken = tokenize(bad, b"x")
    assert broken.returncode == 2 and b"tokenizer.json" in broken.stderr
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    run = tokenize(junk, b"x")
    assert run.returncode != 0 and run.returncode < 128, run
    noarg = tokenize(FIXTURES / "ggml-vocab-gpt-2.gguf", b"x", "--split")
    assert noarg.returncode == 2 and b"--split" in noarg.stderr


HF_GGUF = ROOT / "tests" / "oracle" / "model" / "fixtures" / "hf_gguf"


@pytest.mark.parametrize("fixture", sorted(p.name for p in HF_GGUF.glob("*") if (p / "reference.json").exists()))
def test_real_gguf_prompt_tokenizes_as_transformers_did(fixture):
    """The prompt ids of make_reference.py --gguf came from transformers'
    tokenizer built from the same GGUF; ours must give the same ids."""
    import json
    ref = json.loads((HF_GGUF / fixture / "reference.json").read_text())
    model = ROOT / ref["model_file"]
    run = tokenize(model, ref["prompt_text"].encode())
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    assert [int(t) for t in run.stdout.split()] == ref["prompt_ids"]
