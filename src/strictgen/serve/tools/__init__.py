"""Tool calling in each model's own format, inferred from its chat template.

One module per concern: `render` (conversation → template text), `infer` (the call format and
reasoning markers read off the template's renderings of probe conversations), `families` (the
format as data, and the known families' formats the inference is checked against), `detect`
(what a template implies: format, whether it renders tools, reasoning, stops), `grammar` (the
format as a grammar, each tool's arguments under its JSON Schema), `parse` (output text → content,
reasoning and calls, on any prefix, so streaming adds up), `reasoning` (the think/analysis
markers and where the constraint starts), `gemma` (Gemma 4's value language, by hand), `raw`
(strings written raw between markers).
"""
