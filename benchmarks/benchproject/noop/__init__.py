"""The no-op consumer and task the drain scenarios run."""
