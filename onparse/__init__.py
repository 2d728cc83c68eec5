"""onparse: unsupervised constituency parsing with an ON-LSTM language model.

The package root imports nothing heavy so that ``onparse --help`` and
``onparse --version`` answer without loading torch.
"""

__version__ = "0.1.0"
