"""evalgate: gate LLM and agent changes on their eval suite."""

__version__ = "0.1.0"
