"""Service clients of the tempest plugin."""
