"""Jump-forward up to spelling (compile/forced.py): keys and enum strings that allow every
spelling are still forced, taken raw; a real choice is not."""

import strictgen as sg


def jump(compiler, schema, prefix=""):
    m = sg.GrammarMatcher(compiler.compile_json_schema(schema, whitespace="spaced"))
    assert m.accept_string(prefix)
    return m.find_jump_forward_string()


def test_forced_keys_and_values_through_their_escapes(qwen):
    c = sg.GrammarCompiler(qwen)
    obj = {"type": "object", "properties": {"naïve/😀": {"const": 'a"b/é'}}, "required": ["naïve/😀"], "additionalProperties": False}
    assert jump(c, obj) == '{"naïve/😀": "a\\"b/é"}'
    # a spelling taken part-way still forces the rest
    assert jump(c, obj, '{"na\\u00') == ""  # the hex case is open: e or E
    assert jump(c, obj, '{"na\\u00EF') == 've/😀": "a\\"b/é"}'
    # a real choice between characters is not forced
    assert jump(c, {"enum": ["ab", "a\n"]}) == '"a'
    assert jump(c, {"type": "string", "pattern": "^(a|\\n)$"}) == '"'
