"""Settings: the command line, configuration files, and each file's own settings."""
