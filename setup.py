import pathlib

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).parent
REQUIREMENTS = [line.strip() for line in (HERE / "requirements.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#")]

setup(
    name="pointer_gen",
    version="0.1.0",
    description="Pointer-generator network with coverage (See et al., 2017) in TensorFlow 2 / Keras 3",
    packages=find_packages(include=["pointer_gen", "pointer_gen.*"]),
    python_requires=">=3.10",
    install_requires=REQUIREMENTS,
)
