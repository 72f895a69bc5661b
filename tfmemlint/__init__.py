"""tfmemlint: find TensorFlow sessions that would reserve a whole GPU, and fix them."""

__version__ = "0.2.0"
