"""Package list for setuptools: pulsarlab's packages, and widgets/ installed under the name pulsarlab_widgets.

Everything else is declared in pyproject.toml; this file only computes what pyproject's static `packages` cannot.
"""

from setuptools import find_packages, setup

VIEWS = "pulsarlab_widgets"
packages = find_packages(include=["pulsarlab", "pulsarlab.*"])
packages += [VIEWS] + [f"{VIEWS}.{name}" for name in find_packages("widgets")]
setup(packages=packages)
