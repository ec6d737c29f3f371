"""Rules kept as calls (`ir.called_body`) are the same objects across grammars when their bodies
are: the compiler's cache of rule automata is keyed by body identity, so a big shared rule (a
format's string under a length bound) is then built and minimised once a process."""

from strictgen.grammar.ir import NOTHING, Alt, RuleRef, Seq, called_body, lit
from strictgen.grammar.json_schema import json_schema_grammar


def test_called_body_is_one_object_per_name_and_body_object():
    body = lit("abc")
    rule = called_body("r", body)
    assert rule == Alt((body, Seq((NOTHING, RuleRef("r")))))  # the language is the body's
    assert called_body("r", body) is rule
    assert called_body("other", body) is not rule
    equal_not_same = lit("abc")
    assert called_body("r", equal_not_same) == rule  # another body object: an equal rule of its own
    assert called_body("r", equal_not_same).items[0] is equal_not_same


def test_a_format_string_made_a_call_is_the_same_rule_in_every_grammar():
    """call_big_rules makes the email rule under maxLength 255 a call; two grammars of the schema
    (fresh emitters, as two compiles) hold the very same rule body."""
    schema = {"type": "object", "properties": {"e": {"type": "string", "format": "email", "maxLength": 255}}}
    first, second = json_schema_grammar(schema)[0], json_schema_grammar(dict(schema))[0]
    names = [n for n in first.rules if n.startswith("str_")]
    assert names
    for name in names:
        body = first.rules[name]
        assert body.items[-1:] == (Seq((NOTHING, RuleRef(name))),)  # kept as a call
        assert second.rules[name] is body
