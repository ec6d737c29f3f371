"""Front ends: formats (GBNF, regex, choice, JSON, JSON Schema) to the grammar IR."""
