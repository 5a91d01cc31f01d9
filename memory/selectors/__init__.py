"""Reads of memory, by what they read (docs/ARCHITECTURE.md: selectors). Reads only: no module here
writes, and none imports the services or the edges."""
