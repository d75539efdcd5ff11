"""The app's migrations. May import Django's migration framework only."""
