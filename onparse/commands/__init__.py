"""What each command does between its options (``onparse.cli``) and the library: inputs and outputs opened, the
library called, every failure one line and an exit code."""
