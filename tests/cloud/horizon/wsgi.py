"""Horizon's WSGI application under gunicorn, with its static files.

A deployment's web server serves ``/static/`` from the collected files;
here Django's own static handler does, from Horizon's and our panel's
packages and the SCSS compiled at the first page.
"""

from django.contrib.staticfiles import handlers
from django.core import wsgi

application = handlers.StaticFilesHandler(wsgi.get_wsgi_application())
