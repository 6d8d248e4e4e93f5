"""Qt helpers that capability widgets share (below them in the import order, above services)."""
