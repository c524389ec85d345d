"""The collector: agent reports and actions from the bus into SQL."""
