"""The import path the README gave for the nltk parser in 0.1 and 0.2, kept for code written against it: the parser
is ``onparse.integrations.nltk_parser.ONLSTMParser``."""

from onparse.integrations.nltk_parser import ONLSTMParser

__all__ = ["ONLSTMParser"]
