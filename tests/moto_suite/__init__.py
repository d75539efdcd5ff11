"""moto's own SQS test suite (``tests/test_sqs/`` of moto's source distribution) in moto's
server mode against a live server of our SQS endpoint: ``python -m tests.moto_suite
--db sqlite|postgres`` (see ``run``). ``settings`` and ``urls`` are that server's
project; ``by_design.json`` lists the tests that fail by design, each with its reason."""
