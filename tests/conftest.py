"""Settings for the whole suite: hypothesis runs without per-example deadlines, so a busy
machine slows the tests down instead of failing them (pytest-timeout still bounds each test)."""

from hypothesis import settings

settings.register_profile("meshtopo", deadline=None)
settings.load_profile("meshtopo")
