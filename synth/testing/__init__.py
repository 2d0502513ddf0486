"""Test doubles that stand in for the outside world: a fake LLM server speaking the OpenAI and Anthropic wire formats."""
