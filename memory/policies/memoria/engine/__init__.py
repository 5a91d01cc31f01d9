"""Memoria's pure formulas: the engine's rules hold here (no Django, nothing of the project but memory.engine)."""
