"""What the parts agree on: the snapshot, actions and backend interface,
errors, the policy vocabulary, scope, topology and locality signals.
"""
