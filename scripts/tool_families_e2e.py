"""Every template of ../shared/data/chat-templates on the embedded model: tool_choice="required", one call,
the parsed call validated by jsonschema (the e2e column of issue 17's table). Run: PYTHONPATH=src python scripts/tool_families_e2e.py
(BUDGET=N in the environment: thinking_token_budget N for templates with a reasoning block)."""
import glob, os, json, time
import jsonschema
from strictgen.serve import build_server, ServerLimits
from strictgen.serve.grammars import tools_from_request
from strictgen.serve.worker import Job
from strictgen.serve.app import Server
from strictgen.serve.replies import ChatDeltas, tool_map
srv0 = build_server("default", slots=1, n_ctx=4096, limits=ServerLimits(max_tokens=160))
m = srv0.pool.primary
orig = m.chat_template
W = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"], "additionalProperties": False}
TOOLS = tools_from_request([{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": W}}])
for f in sorted(glob.glob("/work/shared/data/chat-templates/*.jinja")):
    m.chat_template = orig.replaced_by(f)
    srv = Server(srv0.pool, "x", srv0.limits)
    t = time.time()
    try:
        g, _ = srv.tool_grammar(TOOLS, "required", False)
        prompt = srv.encode_chat([{"role": "user", "content": "What is the weather in Paris?"}], TOOLS)
        cfg = srv.config(150, 0, None, chat=True)
        cfg.reasoning_limit = srv.reasoning_limit(int(os.environ.get("BUDGET", "-1")))
        res = srv.pool.run(Job(prompt, g, cfg), None, None)
        msg, has = ChatDeltas(srv.chat.tools, tool_map(TOOLS), srv.reasoning, "c").message(res.text)
        ok = has and all(c["function"]["name"] == "get_weather" and jsonschema.validate(json.loads(c["function"]["arguments"]), W) is None for c in msg["tool_calls"])
        print(os.path.basename(f), srv.chat.detected, "VALID" if ok else "INVALID", f"{time.time()-t:.1f}s", repr(res.text[:160]), flush=True)
    except Exception as e:
        print(os.path.basename(f), "ERROR", type(e).__name__, e, flush=True)
srv0.pool.close()
