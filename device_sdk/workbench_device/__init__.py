"""The device side of Workbench's debug link.

``workbench-device-agent`` (``agent.py``) serves the framed protocol of ``protocol.py`` on a
phone, a board or this machine; ``client.py`` is the host's side of the same protocol. Nothing
here imports Workbench, Qt or torch: it runs wherever Python 3.9+, NumPy and onnxruntime do.
"""

__version__ = "0.1.0"
