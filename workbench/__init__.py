"""Workbench: write, train, convert and verify neural networks for devices, in one app."""

__version__ = "0.1.0"
