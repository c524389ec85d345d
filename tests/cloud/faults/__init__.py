"""Faults in the running cloud: parts failing, doubled, a version behind.

Each scenario ends with nothing lost: the guests' policies hold as the
kernel shows them, every action is in the collector once, and the
scheduler heeds the hosts again (doc/source/reliability.rst). The
cloud tier runs one scenario (test_agents.AgentKilledTest); ``tox -e
cloud-faults`` runs them all.
"""
