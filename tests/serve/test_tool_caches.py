"""The per-template caches of tools/ (detected chat formats, the message shapes a template
renders) are bounded (DESIGN §1: nothing keeps an unbounded dict), and an evicted template is
detected again to the same answer."""

from __future__ import annotations

from strictgen.engine.model import ChatTemplate
from strictgen.serve.tools import detect, render

MESSAGES = [{"role": "user", "content": "hi"}]


def _template(i: int) -> ChatTemplate:
    return ChatTemplate("{% for m in messages %}<" + str(i) + ">{{ m['content'] }}{% endfor %}", "<s>", "</s>")


def test_detected_formats_and_rendered_shapes_stay_within_their_bound():
    first = detect.chat_format(_template(0))
    for i in range(render.TEMPLATES_KEPT + 8):
        assert render.render_chat(_template(i), MESSAGES) == f"<{i}>hi"
        detect.chat_format(_template(i))
    assert len(detect.chat_formats) <= render.TEMPLATES_KEPT
    assert len(render.worked_shapes) <= 2 * render.TEMPLATES_KEPT
    assert (_template(0).source, "<s>", "</s>", "") not in detect.chat_formats  # the oldest went first
    assert detect.chat_format(_template(0)) == first
