"""Sphinx configuration for the nova-numa-policy documentation."""

project = 'nova-numa-policy'
copyright = 'nova-numa-policy developers'
extensions = ['oslo_config.sphinxext']
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
