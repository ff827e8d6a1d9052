"""Builds an HF tokenizer.json from a vocab-only GGUF, the way the models'
own tokenizer.json files are laid out (GPT-2/StarCoder/Falcon/DeepSeek-coder
byte-level BPE; Llama-2/Phi-3 SentencePiece-style BPE with byte fallback and
merges derived from the scores as transformers' SentencePieceExtractor does).
"""
from __future__ import annotations

import json
import pathlib
import struct

import numpy
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def read_gguf_tokenizer(path: str) -> dict:
    """The tokenizer.* metadata of a GGUF (FORMATS.md §1.1). A direct reader:
    gguf.GGUFReader builds every field element by element and needs minutes
    for a 50k-token vocabulary on a busy machine."""
    data = memoryview(pathlib.Path(path).read_bytes())
    if bytes(data[:4]) != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 8
    _n_tensors, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16

    def read_string():
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        text = bytes(data[pos:pos + n]).decode("utf-8")
        pos += n
        return text

    def read_value(vtype):
        nonlocal pos
        if vtype == _STRING:
            return read_string()
        if vtype == _ARRAY:
            etype, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if etype in _SCALARS:
                dtype = numpy.dtype(_SCALARS[etype])
                values = numpy.frombuffer(data, dtype=dtype, count=n, offset=pos).tolist()
                pos += n * dtype.itemsize
                return values
            return [read_value(etype) for _ in range(n)]
        fmt = _SCALARS[vtype]
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    out = {}
    for _ in range(n_kv):
        key = read_string()
        (vtype,) = struct.unpack_from("<I", data, pos)
        pos += 4
        value = read_value(vtype)
        if key.startswith("tokenizer."):
            out[key] = value
    return out


def _pre_tokenizer(pre: str):
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "gpt-2":
        return byte_level
    if pre == "starcoder":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    if pre == "falcon":
        return pre_tokenizers.Sequence([
            pre_tokenizers.Punctuation(behavior="contiguous"),
            byte_level,
            pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Split(Regex("[0-9][0-9][0-9]"), behavior="isolated"),
        ])
    if pre == "deepseek-coder":
        return pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex("[\r\n]"), behavior="isolated"),
            pre_tokenizers.Split(Regex(r"\s?\p{L}+"), behavior="isolated"),
            pre_tokenizers.Split(Regex(r"\s?\p{P}+"), behavior="isolated"),
            pre_tokenizers.Split(Regex("[一-龥ࠀ-一가-퟿]+"), behavior="isolated"),
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    raise ValueError(f"no HF layout known for pre-tokenizer {pre!r}")


def _spm_merges(tokens: list[str], scores: list[float], types: list[int]) -> list[tuple[str, str]]:
    vocab = {t: i for i, t in enumerate(tokens) if types[i] in (NORMAL, UNKNOWN, BYTE, CONTROL, USER_DEFINED)}
    merges = []
    for piece, score in zip(tokens, scores):
        local = []
        for i in range(1, len(piece)):
            left, right = piece[:i], piece[i:]
            if left in vocab and right in vocab:
                local.append((left, right, score))
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2], reverse=True)
    return [(l, r) for l, r, _ in merges]


def build(path: str) -> Tokenizer:
    meta = read_gguf_tokenizer(path)
    tokens = list(meta["tokenizer.ggml.tokens"])
    types = list(meta.get("tokenizer.ggml.token_type", [NORMAL] * len(tokens)))
    model_name = meta["tokenizer.ggml.model"]
    if model_name == "gpt2":
        vocab = {t: i for i, t in enumerate(tokens)}
        merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        tok.pre_tokenizer = _pre_tokenizer(meta.get("tokenizer.ggml.pre", "gpt-2"))
        tok.decoder = decoders.ByteLevel()
    elif model_name == "llama":
        scores = list(meta["tokenizer.ggml.scores"])
        vocab = {t: i for i, t in enumerate(tokens)}
        unk = tokens[int(meta.get("tokenizer.ggml.unknown_token_id", 0))]
        tok = Tokenizer(models.BPE(vocab=vocab, merges=_spm_merges(tokens, scores, types), unk_token=unk,
                                   byte_fallback=True, fuse_unk=True))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    else:
        raise ValueError(f"{path}: tokenizer model {model_name!r}")
    added = [AddedToken(tokens[i], special=(types[i] != USER_DEFINED), normalized=False)
             for i in range(len(tokens)) if types[i] in (CONTROL, USER_DEFINED, UNKNOWN)]
    # add_tokens/add_special_tokens keep the ids the vocabulary already gives them.
    tok.add_special_tokens([a for a in added if a.special])
    tok.add_tokens([a for a in added if not a.special])
    return tok


def save(tok: Tokenizer, out_dir: str) -> str:
    target = f"{out_dir}/tokenizer.json"
    tok.save(target)
    # Only the special-token names; add_bos is irrelevant to add_special=False.
    with open(f"{out_dir}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump({"add_bos_token": False, "add_eos_token": False}, f)
    return target
