import pathlib
import re

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).parent
REQUIREMENTS = [line.strip() for line in (HERE / "requirements.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
# The version's one place, read as text: installing must not need the package's dependencies.
VERSION = re.search(r'^__version__ = "([^"]+)"$',
                    (HERE / "pointer_gen" / "base" / "version.py").read_text(), re.MULTILINE)[1]

setup(
    name="pointer_gen",
    version=VERSION,
    description="Pointer-generator network with coverage (See et al., 2017) in TensorFlow 2 / Keras 3",
    packages=find_packages(include=["pointer_gen", "pointer_gen.*"]),
    # TensorFlow 2.21's wheels are for CPython 3.10 to 3.13.
    python_requires=">=3.10,<3.14",
    install_requires=REQUIREMENTS,
    # TensorFlow 2.21 no longer brings the `tensorboard` command; the logs need only TensorFlow.
    extras_require={"tensorboard": ["tensorboard==2.21.0"]},
)
