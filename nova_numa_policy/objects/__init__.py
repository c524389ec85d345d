"""Versioned objects exchanged between the agent and its consumers."""
