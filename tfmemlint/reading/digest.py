"""Content hashes: the one way the cache and the project index fingerprint bytes. At the bottom
of the package, with no import of its own, so that a replayed run pays nothing more for it."""

from __future__ import annotations

try:  # hashlib.blake2b itself, without hashlib's import of OpenSSL's bindings (3 ms a run)
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b


def digest(data: bytes, size: int) -> str:
    """A hex digest of `size` bytes."""
    return blake2b(data, digest_size=size).hexdigest()


def content_hash(raw: bytes) -> str:
    """The fingerprint of a file's bytes, as the cache and the project's dependencies keep it."""
    return digest(raw, 16)


def listing_hash(names: list[str]) -> str:
    """The fingerprint of a folder's listing (its names, sorted): a result that depends on which
    files a folder holds keeps it, and stays good when a file there is only rewritten."""
    return content_hash("\n".join(sorted(names)).encode("utf-8", "surrogateescape"))
