"""The lab wing: the host simulator, the cluster study and the sandbox.

Nothing shipped to a compute or scheduler node imports this package. It
is the one place allowed to import the agent (``agent/``) and the
scheduler plugins (``placement_filters/``), to run them on simulated
hosts, and the one place allowed to import ``nova.tests`` (the sandbox
runs nova's own in-process services).
"""
