"""What the operating system does for Workbench, one module each, so every capability asks the
same way and the answers hold off Linux too: processes (identity, liveness, detaching), file
locks, atomic file writes, secrets in the OS keyring (or a file of the user's only where there is
none), TOML files the user also edits, and the user's settings file.

Nothing here imports Qt or another Workbench package: every capability may import it.
"""
