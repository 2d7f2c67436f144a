"""The compiler: runs the stages, owns the configuration and the on-disk cache."""
