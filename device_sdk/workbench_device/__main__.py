"""``python -m workbench_device``: the same as ``workbench-device-agent``."""

from workbench_device.agent import main

if __name__ == "__main__":
    raise SystemExit(main())
