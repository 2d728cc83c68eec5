"""The shipped models, one model directory each, installed as the package ``onparse.models``.

Found with ``importlib.resources`` (``onparse.modeldir.MODELS``), so a wheel,
an sdist and an editable install all parse offline from any folder.
"""
