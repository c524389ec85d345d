"""nova's own functional modules, as nova ships them, with our plugins on.

See :mod:`tests.functional.nova.shipped` and doc/source/testing.rst.
"""
