from onparse.cli import entry_point

entry_point()
