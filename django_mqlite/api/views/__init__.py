"""The API's views, one module per resource. May import what ``api`` may import."""
