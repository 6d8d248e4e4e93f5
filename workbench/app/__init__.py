"""Process entry points: the hub, project windows, and how each is started."""
