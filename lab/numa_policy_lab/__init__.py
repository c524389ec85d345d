"""The lab wing: the host simulator, the cluster study and the sandbox.

A distribution of its own (``lab/pyproject.toml``), installed from a
clone beside nova-numa-policy and never shipped with it: nothing shipped
to a compute or scheduler node imports this package, and its numpy and
highspy stay out of nova's environment. It is the one place allowed to
import the agent (``agent/``) and the scheduler plugins
(``placement_filters/``), to run them on simulated hosts, and the one
place allowed to import ``nova.tests`` (the sandbox runs nova's own
in-process services).
"""
