"""What tests share beyond fixtures: the local stand-in for the LLM providers (``fake_provider``)."""
