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
    # TensorFlow 2.21's wheels are for CPython 3.10 to 3.13.
    python_requires=">=3.10,<3.14",
    install_requires=REQUIREMENTS,
    # TensorFlow 2.21 no longer brings the `tensorboard` command; the logs need only TensorFlow.
    extras_require={"tensorboard": ["tensorboard==2.21.0"]},
)
