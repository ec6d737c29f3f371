"""`--chat-template FILE` on `strictgen generate`: the file replaces the model's template."""

from __future__ import annotations

from pathlib import Path

import pytest

from strictgen.cli import build_parser, main

LLAMA = Path("../shared/data/chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja")


def test_generate_with_another_template(capsys):
    if not LLAMA.is_file():
        pytest.skip(f"{LLAMA} is absent (the shared data folder)")
    assert main(["generate", "--quiet", "--chat-template", str(LLAMA), "--choice", "yes", "--choice", "no", "Is water wet?"]) == 0
    assert capsys.readouterr().out.strip() in ("yes", "no")


def test_a_missing_or_broken_template_is_a_clear_error(capsys, tmp_path):
    assert main(["generate", "--quiet", "--chat-template", str(tmp_path / "none.jinja"), "--choice", "a", "hi"]) == 2
    assert "cannot read chat template" in capsys.readouterr().err
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}", encoding="utf-8")
    assert main(["generate", "--quiet", "--chat-template", str(bad), "--choice", "a", "hi"]) == 2
    assert "does not compile" in capsys.readouterr().err


def test_serve_takes_the_flag():
    args = build_parser().parse_args(["serve", "--chat-template", "x.jinja"])
    assert args.chat_template == "x.jinja"
