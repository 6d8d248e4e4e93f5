"""Real services (sshd, …) started by fixtures for the tests that need them."""
