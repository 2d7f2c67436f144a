#!/usr/bin/env bash
# The engine-integration tests (and tests/test_hf_vocabulary.py's comparisons with llama.cpp, which need
# torch through transformers' GGUF reader), each engine in a venv of its own: SGLang and vLLM pin different torch and
# transformers versions, and each installs ~10 GB of CUDA wheels (docs/integrations.md says why CI leaves
# them out).  Run from a checkout set up as README.md says (its .venv holds localgcd's own dependencies,
# llama-cpp-python built once; the engine venvs read them after their own packages).
#
#   bash tests/run_engine_tests.sh            # both engines
#   bash tests/run_engine_tests.sh vllm       # one
#
# MAIN_VENV (default .venv) names the set-up venv.  An engine venv (.venv-sglang, .venv-vllm) is created
# and installed on the first run, then reused.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
main_venv=${MAIN_VENV:-.venv}
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(sglang vllm)
declare -A pins=([sglang]="sglang==0.5.23" [vllm]="vllm==0.33.0")
purelib() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
status=0
for engine in "${engines[@]}"; do
    venv=.venv-$engine
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        time "$venv/bin/pip" install "${pins[$engine]}" gguf
    fi
    purelib "$main_venv" > "$(purelib "$venv")/localgcd-main-venv.pth"
    tests=("tests/test_integrations_$engine.py" tests/test_integrations_torch_bitmask.py)
    # transformers' GGUF reader needs torch: the HF vocabulary's comparisons with llama.cpp run here
    [ "$engine" = sglang ] && tests+=(tests/test_hf_vocabulary.py)
    PYTHONPATH=$root "$venv/bin/python" -m pytest -n 0 -q "${tests[@]}" || status=1
done
exit $status
