#!/usr/bin/env python
"""manage.py of the worker test project (run with the checkout root on PYTHONPATH)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.workerproject.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
