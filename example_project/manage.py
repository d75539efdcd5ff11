#!/usr/bin/env python3
import os
import sys
from pathlib import Path

if __name__ == "__main__":
    # Run from a checkout without installing: make the package importable.
    sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
