"""llama.cpp runs on every CPU: the embedded model is loaded with its weights in llama.cpp's plain
CPU buffers (`use_extra_bufts` off), because the buffer llama.cpp repacks them into on Intel AMX
CPUs segfaults in its first matrix product (llama.cpp issue 20824). On an AMX machine the load log
of a default load names an "AMX model buffer" and the first decode kills the process; these tests
fail there without the fix, and on any other CPU they walk the same load path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from strictgen.tokenizer.info import smollm2_gguf_path
from tests.models import embedded

CHILD = textwrap.dedent(
    """
    import json, sys
    from strictgen.engine.llama_cpp_runtime import open_llama
    llm = open_llama(sys.argv[1], n_ctx=256, n_threads=1, n_threads_batch=1, verbose=True)
    tokens = llm.tokenize(b"The capital of France is")
    llm.eval(tokens)
    greedy = []
    for _ in range(4):
        logits = llm.scores[llm.n_tokens - 1]
        greedy.append(int(logits.argmax()))
        llm.eval([greedy[-1]])
    print(json.dumps({"use_extra_bufts": bool(llm.model_params.use_extra_bufts), "greedy": greedy}))
    """
)


def _evaluate_in_a_child() -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(smollm2_gguf_path())], capture_output=True, text=True, timeout=300,
    )


def test_a_child_process_decodes_with_the_weights_in_plain_cpu_buffers():
    """The load and a few decodes in a child process (a segfault there is an exit code, not the end
    of the test session); its llama.cpp log has the CPU model buffer and no repacked one."""
    proc = _evaluate_in_a_child()
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    buffers = [line for line in proc.stderr.splitlines() if "model buffer size" in line]
    assert buffers, proc.stderr[-2000:]  # llama.cpp still logs its buffers (else the check below is empty)
    assert not [line for line in buffers if "AMX" in line or "REPACK" in line], buffers
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["use_extra_bufts"] is False and len(result["greedy"]) == 4


def test_greedy_decoding_repeats_itself_on_this_cpu():
    """Whatever kernels this CPU's build picks, the same load gives the same greedy tokens twice."""
    first, second = _evaluate_in_a_child(), _evaluate_in_a_child()
    assert first.returncode == second.returncode == 0
    assert json.loads(first.stdout.splitlines()[-1]) == json.loads(second.stdout.splitlines()[-1])


def test_the_engine_s_model_is_loaded_without_extra_buffers_and_the_default_is_restored():
    from llama_cpp import llama_cpp as native

    model = embedded("llama.cpp")
    assert model.llm.model_params.use_extra_bufts is False
    # llama.cpp's own default asks for them: the setting is open_llama's, and the swap is undone
    assert native.llama_model_default_params().use_extra_bufts is True
    assert native.llama_model_default_params.__name__ == "llama_model_default_params"
