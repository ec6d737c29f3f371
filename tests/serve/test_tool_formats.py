"""Tool-call formats inferred from each real chat template (../shared/data/chat-templates): the
inferred format writes calls exactly as the family's known format (issue 17's hand-written entries,
kept as data), the prompt is exactly Hugging Face's rendering of the same messages and tools, the
template's own rendering of calls parses back and is accepted by the call grammar under the real
vocabularies' tokenisations, and streamed deltas add up to the final message."""

from __future__ import annotations

import itertools
import json
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.engine.model import ChatTemplate
from strictgen.serve.chat import render_text
from strictgen.serve.grammars import GrammarFactory, Tool
from strictgen.serve.tools.detect import chat_format
from strictgen.serve.tools.families import BY_NAME, HERMES
from strictgen.serve.tools.parse import parse_output
from strictgen.serve.tools.render import ADAPTATIONS, adapt_messages

from ..helpers import canonical_ids, random_split

FOLDER = Path("../shared/data/chat-templates")
if not FOLDER.is_dir():
    pytest.skip(f"{FOLDER} is absent (the shared data folder)", allow_module_level=True)

EXPECTED = {  # the family each template's inferred format must equal; "fallback": it renders neither tools nor calls
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": "command_r7b",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": "mistral_v11",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": "hermes",
    "Qwen-Qwen2.5-7B-Instruct.jinja": "hermes",
    "Qwen-Qwen3-0.6B.jinja": "hermes",
    "Qwen3-Coder.jinja": "qwen3_coder",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "deepseek_r1",
    "deepseek-ai-DeepSeek-V3.1.jinja": "deepseek_v3_1",
    "fireworks-ai-llama-3-firefunction-v2.jinja": "firefunction_v2",
    "google-gemma-2-2b-it.jinja": "fallback",
    "google-gemma-4-31B-it.jinja": "gemma4",
    "meetkai-functionary-medium-v3.1.jinja": "functionary_v3_1",
    "meetkai-functionary-medium-v3.2.jinja": "functionary_v3_2",
    "meta-llama-Llama-3.1-8B-Instruct.jinja": "llama3_json",
    "meta-llama-Llama-3.2-3B-Instruct.jinja": "llama3_json",
    "meta-llama-Llama-3.3-70B-Instruct.jinja": "llama3_json",
    "microsoft-Phi-3.5-mini-instruct.jinja": "fallback",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": "mistral_nemo",
    "moonshotai-Kimi-K2.jinja": "kimi_k2",
    "openai-gpt-oss-120b.jinja": "harmony",
}
NO_TOOLS = {"google-gemma-2-2b-it.jinja", "microsoft-Phi-3.5-mini-instruct.jinja", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-ai-DeepSeek-V3.1.jinja"}  # templates that do not render `tools`
NAMES = sorted(p.name for p in FOLDER.glob("*.jinja"))

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}
ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
TOOLS = [Tool("get_weather", WEATHER, "Weather"), Tool("add", ADD, "Add two numbers")]
TOOL_MAP = {t.name: t.parameters for t in TOOLS}
CALLS = [("get_weather", {"city": "Paris", "days": 2}), ("add", {"a": 1, "b": 22})]
IDS = ["abcDEF123", "xyz789QRS"]  # already what Mistral's templates accept
QUESTION = "Weather in Paris, and 1+22?"


def _template(name: str) -> ChatTemplate:
    return ChatTemplate((FOLDER / name).read_text(encoding="utf-8"), "<s>", "</s>")


def _fmt(name: str):
    return chat_format(_template(name)).tools


def _calls(name: str):
    return CALLS if _fmt(name).parallel else CALLS[:1]


def _conversation(calls, follow_up: bool = True) -> list[dict]:
    tool_calls = [{"id": IDS[i], "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
    head = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": QUESTION}, {"role": "assistant", "content": None, "tool_calls": tool_calls}]
    if not follow_up:
        return head
    return [
        *head,
        *({"role": "tool", "tool_call_id": IDS[i], "name": n, "content": json.dumps({"ok": i})} for i, (n, _) in enumerate(calls)),
        {"role": "assistant", "content": "Sunny, and 23."},
        {"role": "user", "content": "Thanks!"},
    ]


def _hf_render(name: str, messages: list[dict], generation: bool = True) -> str:
    """Hugging Face's rendering (transformers' own renderer) of `messages` and TOOLS, in the first
    shape the template accepts (the order render_chat tries them in)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    tools = [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}} for t in TOOLS]
    extra = {"functions": json.dumps([t["function"] for t in tools], ensure_ascii=False, indent=4), "datetime": time.strftime("%d %b %Y")}
    for n in range(len(ADAPTATIONS) + 1):
        for how in itertools.combinations(ADAPTATIONS, n):
            try:
                return render_jinja_template([adapt_messages(messages, frozenset(how))], tools=tools, chat_template=_template(name).source, add_generation_prompt=generation, bos_token="<s>", eos_token="</s>", **extra)[0][0]
            except Exception:
                continue
    raise AssertionError("Hugging Face renders no shape of the conversation")


def _model_text(name: str) -> str:
    """The calls as the inferred format writes them (what the model writes after the prompt)."""
    return _fmt(name).render(_calls(name), IDS)


def test_every_template_is_listed():
    assert NAMES == sorted(EXPECTED)


@pytest.mark.parametrize("name", NAMES)
def test_inferred_format_equals_the_known_family(name):
    cf = chat_format(_template(name))
    assert cf.native == (name not in NO_TOOLS)
    if EXPECTED[name] == "fallback":
        assert (cf.detected, cf.tools) == ("fallback", HERMES)
        return
    family = BY_NAME[EXPECTED[name]]
    assert cf.detected == "inferred", cf.missing
    fmt = cf.tools
    assert fmt.parallel == family.parallel and fmt.content_prefix == family.content_prefix
    for calls in ([CALLS[0]], CALLS[:2 if family.parallel else 1], [CALLS[1], CALLS[0]] if family.parallel else [CALLS[1]]):
        assert fmt.render(calls, IDS) == family.render(calls, IDS)
    assert fmt.trigger == family.trigger or fmt.trigger.strip() == family.trigger.strip()


@pytest.mark.parametrize("name", NAMES)
def test_prompt_is_hugging_face_rendering(name):
    """The prompt sent is exactly Hugging Face's rendering of the messages and tools (templates that
    render tools), or the fallback: the tools in a system message of ours."""
    rendered = render_text(_template(name), _conversation(_calls(name)), TOOLS)
    assert QUESTION in rendered and "Thanks!" in rendered
    if name in NO_TOOLS:
        assert not chat_format(_template(name)).native and '"name": "get_weather"' in rendered and "<tools>" in rendered
        return
    assert rendered == _hf_render(name, _conversation(_calls(name)))
    assert render_text(_template(name), _conversation(_calls(name))[:2], TOOLS) == _hf_render(name, _conversation(_calls(name))[:2])


@pytest.mark.parametrize("name", [n for n in NAMES if EXPECTED[n] != "fallback"])
def test_rendered_calls_parse_back(name):
    """The template's own rendering of an assistant turn with calls holds the inferred format's
    text, and that text parses back to the calls."""
    rendered = _hf_render(name, _conversation(_calls(name), follow_up=False), generation=False)
    text = _model_text(name)
    assert text in rendered[rendered.index(QUESTION) :], "the template renders the calls as the inferred format writes them"
    parsed = parse_output(text, _fmt(name), TOOL_MAP, None, final=True)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == _calls(name)
    assert all(c.complete for c in parsed.calls)


@pytest.fixture(scope="module")
def factories():
    return {}


@pytest.mark.parametrize("name", [n for n in NAMES if EXPECTED[n] != "fallback"])  # the others render no calls
def test_grammar_accepts_the_templates_rendering(name, vocab, factories):
    vname, tok = vocab
    factory = factories.setdefault(vname, GrammarFactory(sg.GrammarCompiler(tok)))
    fmt = _fmt(name)
    rendered = _hf_render(name, _conversation(_calls(name), follow_up=False), generation=False)
    at = rendered.index(_model_text(name), rendered.index(QUESTION))
    text = rendered[at : at + len(_model_text(name))]  # the template's own text of the calls
    grammar = factory.tool_calls(TOOLS, mode="required", parallel=True, reasoning=None, fmt=fmt)
    splits = [canonical_ids(vname, text), random_split(tok, text.encode(), random.Random(17))]
    tried = 0
    for ids in splits:
        if ids is None or any(tok.is_special[i] for i in ids):
            continue  # no encoder, or the encoder turned a marker into its special token
        tried += 1
        m = sg.GrammarMatcher(grammar)
        assert all(m.accept_token(i) for i in ids), f"{vname} refused a token of {text!r}"
        assert m.accept_token(tok.eos_token_ids[0]) and m.is_terminated()
    assert tried, "no tokenisation of the call text was checked"
    wrong = text.replace("Paris", "Paris\x00") if '"Paris"' in text else text.replace("22", "x")
    assert not sg.GrammarMatcher(grammar).accept_string(wrong) or wrong == text


def _assemble(deltas_list):
    """The message the OpenAI client would assemble from chat deltas."""
    content, reasoning, calls = "", "", {}
    for d in deltas_list:
        content += d.get("content", "")
        reasoning += d.get("reasoning_content", "")
        for tc in d.get("tool_calls", []):
            c = calls.setdefault(tc["index"], {"name": None, "arguments": ""})
            if "id" in tc:
                c["name"] = tc["function"]["name"]
            c["arguments"] += tc["function"].get("arguments", "")
    return content, reasoning, [(c["name"], c["arguments"]) for _, c in sorted(calls.items())]


def _outputs(name: str) -> list[str]:
    cf = chat_format(_template(name))
    text = _model_text(name)
    prefix = f"{cf.reasoning.open}Let me think: {cf.tools.trigger[:3]} here.{cf.reasoning.close}\n" if cf.reasoning and not cf.reasoning.starts_inside else ""
    return [prefix + text, prefix + "Checking.\n" + text, prefix + "No tools needed, 1+22 is 23.", (prefix + text)[: len(prefix + text) * 2 // 3]]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_streaming_equals_non_streaming(name, data):
    from strictgen.serve.replies import ChatDeltas

    cf = chat_format(_template(name))
    text = data.draw(st.sampled_from(_outputs(name)))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=12))))
    stream = ChatDeltas(cf.tools, TOOL_MAP, cf.reasoning, "call_x")
    got = []
    for cut in cuts:
        got += stream.deltas(text[:cut], final=False)
    got += stream.deltas(text, final=True)
    msg, _ = ChatDeltas(cf.tools, TOOL_MAP, cf.reasoning, "call_x").message(text)
    content, reasoning, calls = _assemble(got)
    assert calls == [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls", [])]
    assert content == (msg["content"] or "") or (not msg["content"] and not content.strip())
    assert reasoning == msg.get("reasoning_content", "")


def test_unknown_template_gets_the_hermes_fallback():
    cf = chat_format(ChatTemplate("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"))
    assert (cf.detected, cf.native, cf.tools) == ("fallback", False, HERMES)
    text = render_text(ChatTemplate("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"), _conversation(CALLS), TOOLS)
    assert "<tools>" in text and HERMES.render_call(*CALLS[0]) in text and "<tool_response>" in text


def test_gemma_values_round_trip():
    from strictgen.serve.tools import gemma

    args = {"s": "x, y}", "n": 2, "f": 1.5, "b": True, "o": {"k": "v", "a": [1, "z"]}}
    text = gemma.render_pairs(args) + "}"
    assert gemma.read_pairs(text, 0, "}") == (args, len(text))
    with pytest.raises(gemma.Incomplete):
        gemma.read_pairs(text[:-3], 0, "}")


@pytest.mark.parametrize("name", ["mistralai-Mistral-Nemo-Instruct-2407.jinja", "Qwen3-Coder.jinja", "google-gemma-4-31B-it.jinja"])
def test_named_and_single_call_grammars(name):
    tok = sg.TokenizerInfo.from_name("smollm2")
    factory = GrammarFactory(sg.GrammarCompiler(tok))
    fmt = chat_format(_template(name)).tools
    named = factory.tool_calls(TOOLS, mode="named", parallel=True, reasoning=None, fmt=fmt, name="add")
    single = factory.tool_calls(TOOLS, mode="required", parallel=False, reasoning=None, fmt=fmt)
    auto = factory.tool_calls(TOOLS, mode="auto", parallel=True, reasoning=None, fmt=fmt)
    add_only, both = fmt.render(CALLS[1:], IDS), fmt.render(CALLS, IDS)

    def ok(g, text):
        m = sg.GrammarMatcher(g)
        return m.accept_string(text) and m.accept_token(tok.eos_token_ids[0])

    assert ok(named, add_only) and not ok(named, fmt.render(CALLS[:1], IDS)) and not ok(named, both)
    assert ok(single, add_only) and not ok(single, both)
    assert ok(auto, "Sure. " + both) and ok(auto, "No call.") and not ok(auto, "Sure. " + both.replace('"Paris"', "7").replace("Paris", "x").replace("22", "y"))


def test_gemma_string_bounds():
    tok = sg.TokenizerInfo.from_name("smollm2")
    fmt = chat_format(_template("google-gemma-4-31B-it.jinja")).tools
    short = Tool("f", {"type": "object", "properties": {"s": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"}}, "required": ["s"]})
    g = GrammarFactory(sg.GrammarCompiler(tok)).tool_calls([short], mode="required", parallel=False, reasoning=None, fmt=fmt)
    for value, ok in [("abc", True), ("abcd", False), ("ab1", False)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(fmt.render([("f", {"s": value})])) and m.accept_token(tok.eos_token_ids[0])) is ok, value


def test_qwen3_coder_raw_strings_keep_length_and_enum():
    tok = sg.TokenizerInfo.from_name("smollm2")
    fmt = chat_format(_template("Qwen3-Coder.jinja")).tools
    tool = Tool("f", {"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}, "e": {"type": "string", "enum": ["up", "down"]}}, "required": ["s", "e"]})
    g = GrammarFactory(sg.GrammarCompiler(tok)).tool_calls([tool], mode="required", parallel=False, reasoning=None, fmt=fmt)
    for args, ok in [({"s": "a b", "e": "up"}, True), ({"s": "abcd", "e": "up"}, False), ({"s": "ab", "e": "left"}, False)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(fmt.render([("f", args)])) and m.accept_token(tok.eos_token_ids[0])) is ok, args
