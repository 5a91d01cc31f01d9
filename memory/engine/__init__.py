"""The MemoryOS engine: pure functions over plain values. No Django, Qdrant or LLM imports."""
