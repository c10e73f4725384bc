"""Rules presets, installed as the package ``burako_env.presets`` (see pyproject)."""
