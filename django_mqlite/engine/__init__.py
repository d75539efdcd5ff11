"""The queue as a SQL state machine. Imports only the standard library and django.db."""
