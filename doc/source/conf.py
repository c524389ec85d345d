"""Sphinx configuration for the nova-numa-policy documentation."""

project = 'nova-numa-policy'
copyright = 'nova-numa-policy developers'
extensions = []
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
