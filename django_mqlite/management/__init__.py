"""Django's management-command package for this app. May import every package: the
commands are the top of the stack."""
