"""A project without any Tasks framework (Django 5.2 without the ``django-tasks``
backport): its settings, and a child process that drives every surface under them."""
