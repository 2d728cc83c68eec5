"""onparse inside other toolkits: nltk's ``ParserI`` (``nltk_parser.ONLSTMParser``) and a spaCy pipeline component
(``spacy_component``, registered as ``onparse`` by entry point). Each imports its toolkit; nothing here is imported
by the rest of the package."""
