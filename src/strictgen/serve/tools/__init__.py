"""Tool calling in each model family's own format, read off its chat template.

One module per concern: `render` (conversation → template text), `families` (the call formats as
data), `detect` (which format a template speaks, by rendering a probe call through it), `grammar`
(the format as a structural tag, so calls are constrained by each tool's JSON Schema), `parse`
(output text → content, reasoning and calls, on any prefix, so streaming adds up), `reasoning`
(the think/analysis markers and where the constraint starts).
"""
