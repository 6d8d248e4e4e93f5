"""The shell: welcome and project windows, the command registry, palette and menus."""
