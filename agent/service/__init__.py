"""The agent service: its command, its period, what it sends and publishes."""
