"""The wheel's packages (everything else is in pyproject.toml).

graphview/ ships as it is. Two top-level folders ship inside it, where an installed graphview
finds them (:mod:`graphview.core.bundled`): sample_models/ (the scripts the start page lists) as
graphview/sample_models, and resources/ (stylesheets, icons) as graphview/resources. In a checkout
they stay where users look for them; an editable install reads them there.
"""

from setuptools import find_namespace_packages, find_packages, setup

SHIPPED = {"graphview.sample_models": "sample_models", "graphview.resources": "resources"}

packages = find_packages(include=["graphview", "graphview.*"])
package_data = {}
for package, folder in SHIPPED.items():
    # their folders hold scripts and data, not packages with an __init__.py: each folder is listed
    for name in [package] + [f"{package}.{sub}" for sub in find_namespace_packages(where=folder, exclude=["*__pycache__*"])]:
        packages.append(name)
        package_data[name] = ["*"]

setup(packages=packages, package_dir=SHIPPED, package_data=package_data)
