"""compile layer."""
