"""The operator's command line, ``manage.py mqlite SUBCOMMAND`` (parsing is in
``management/commands/mqlite.py``): ``subcommands`` (queues, send, peek, redrive, …),
``control`` (pause, resume, limits), ``top`` (the live view) and ``health`` (is one
worker alive).

May import: the public package, ``engine``, ``conf``, ``exceptions`` and ``models``
(inside functions). Nothing imports ``cli`` but the management command."""
