"""The ``localgcd`` terminal command."""
