"""Model files are refused before an array is unpacked when their declared sizes exceed what the
fitted state needs: a 1 MB file that unpacks to 1 GB is refused in well under a second and
100 MB, and a symbolic link among the members gets a clear refusal."""

from __future__ import annotations

import io
import stat
import struct
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

from multitask import L21Regressor, MultiTaskCV
from multitask.persistence import ModelFileError, load_model, save_model

GIB = 1 << 30
MIB = 1 << 20


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    task = np.repeat([0, 1, 2], 20)
    y = X @ rng.normal(size=5) + rng.normal(size=60)
    path = tmp_path_factory.mktemp("model") / "model.skops"
    save_model(L21Regressor().fit(X, y, task), path)
    return path


def _members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _coef_member(members: dict[str, bytes]) -> str:
    """The member of ``coef_`` (shape (3, 5))."""
    for name, data in members.items():
        if name.endswith(".npy"):
            arr = np.load(io.BytesIO(data))
            if arr.shape == (3, 5):
                return name
    raise AssertionError("no coef_ member")


def _zeros_stream(header: bytes, n_zeros: int) -> tuple[bytes, int]:
    """A raw deflate stream of ``header`` followed by ``n_zeros`` zero bytes (a multiple of 1 MiB),
    built from one compressed MiB repeated (a full flush resets the compressor), and its CRC."""
    block = bytes(MIB)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)
    one = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    tail = c.flush()
    crc = zlib.crc32(header)
    for _ in range(n_zeros // MIB):
        crc = zlib.crc32(block, crc)
    return head + one * (n_zeros // MIB) + tail, crc


def _zip(entries) -> bytes:
    """A zip archive written by hand: ``entries`` of ``(name, raw data, method, crc,
    unpacked size, unix mode)`` (the raw data already compressed for ``method`` 8)."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, raw, method, crc, size, mode in entries:
        offset = out.tell()
        fname = name.encode()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc,
                              len(raw), size, len(fname), 0) + fname + raw)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0, method,
                                  0, 0x21, crc, len(raw), size, len(fname), 0, 0, 0, 0,
                                  mode << 16, offset) + fname)
    cd = central.getvalue()
    start = out.tell()
    out.write(cd)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(cd),
                          start, 0))
    return out.getvalue()


def _stored(name: str, data: bytes, mode: int = stat.S_IFREG | 0o600):
    return (name, data, 0, zlib.crc32(data), len(data), mode)


def _bomb(saved, tmp_path, how: str):
    """A copy of ``saved`` with about 1 GiB of zeros in about 1 MB: ``"shape"``, coef_ whose
    header declares (3, 44695552) float64 (as many bytes as it holds); ``"size"``, coef_'s
    own header and 1 GiB of zeros after it; ``"extra"``, one more member of zeros that the
    schema does not name."""
    members = _members(saved)
    coef = _coef_member(members)
    entries = [_stored(n, d) for n, d in members.items() if how == "extra" or n != coef]
    if how == "shape":
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f8", "fortran_order": False, "shape": (3, 1023 * MIB // 24)})
        head = header.getvalue()
        n_zeros = 1023 * MIB  # exactly the 3 x 44695552 floats the header declares
        raw, crc = _zeros_stream(head, n_zeros)
        size = len(head) + n_zeros
        name = coef
    else:
        head = members[coef] if how == "size" else b""
        raw, crc = _zeros_stream(head, GIB)
        size = len(head) + GIB
        name = coef if how == "size" else "999.npy"
    entries.append((name, raw, 8, crc, size, stat.S_IFREG | 0o600))
    path = tmp_path / f"bomb-{how}.skops"
    path.write_bytes(_zip(entries))
    return path


@pytest.mark.parametrize("how", ["shape", "size", "extra"])
def test_a_small_file_that_unpacks_to_a_gigabyte_is_refused_at_once(saved, tmp_path, how):
    """A 0.8 MB file of 800 MB of zeros took 31 s and 1.9 GB before the loader refused it."""
    path = _bomb(saved, tmp_path, how)
    assert path.stat().st_size < 2 * MIB
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ModelFileError, match="refused") as err:
            load_model(path)
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < 1.0, seconds
    assert peak < 100 * MIB, peak
    expected = {"shape": "L21Regressor.coef_: its array header declares shape (3, 44695552)",
                "size": "needs 248", "extra": "'999.npy' is not part of the model"}[how]
    assert expected in str(err.value)


def test_the_declared_shape_is_compared_with_the_model_before_reading(saved, tmp_path):
    """A member whose header claims more entries than the model's shapes, stored (no
    compression ratio to give it away), is refused naming the attribute."""
    members = _members(saved)
    coef = _coef_member(members)
    big = io.BytesIO()
    np.save(big, np.zeros((3, 6)))  # one feature more than n_features_in_ = 5
    entries = [_stored(n, big.getvalue() if n == coef else d) for n, d in members.items()]
    path = tmp_path / "shape.skops"
    path.write_bytes(_zip(entries))
    with pytest.raises(ModelFileError,
                       match=r"coef_.*6 features where the model has 5 \(as in n_features_in_"):
        load_model(path)


def test_a_symbolic_link_member_is_refused_clearly(saved, tmp_path):
    """A symbolic link among the members got numpy's "allow_pickle" hint."""
    members = _members(saved)
    coef = _coef_member(members)
    entries = [_stored(n, d) for n, d in members.items() if n != coef]
    entries.append(_stored(coef, b"/etc/passwd", stat.S_IFLNK | 0o777))
    path = tmp_path / "link.skops"
    path.write_bytes(_zip(entries))
    with pytest.raises(ModelFileError, match="symbolic link") as err:
        load_model(path)
    assert "allow_pickle" not in str(err.value)


def test_a_member_named_twice_or_a_folder_is_refused(saved, tmp_path):
    members = _members(saved)
    first = next(iter(members))
    entries = [_stored(n, d) for n, d in members.items()] + [_stored(first, members[first])]
    path = tmp_path / "twice.skops"
    path.write_bytes(_zip(entries))
    with pytest.raises(ModelFileError, match="given twice"):
        load_model(path)
    entries = [_stored(n, d) for n, d in members.items()] + [
        _stored("data/", b"", stat.S_IFDIR | 0o700)]
    path.write_bytes(_zip(entries))
    with pytest.raises(ModelFileError, match="folder"):
        load_model(path)


def test_valid_files_still_load(saved, tmp_path):
    model = load_model(saved)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    task = np.repeat([0, 1], 20)
    cv = MultiTaskCV(L21Regressor(), n_alphas=3).fit(X, X[:, 0] + rng.normal(size=40), task)
    save_model(cv, tmp_path / "cv.skops")
    back = load_model(tmp_path / "cv.skops")
    np.testing.assert_array_equal(back.predict(X, task), cv.predict(X, task))
    assert model.coef_.shape == (3, 5)


def test_a_member_longer_than_its_array_header_is_refused(saved, tmp_path):
    """Bytes after the array its header declares: the member needs more memory than its shape;
    refused before it is read."""
    members = _members(saved)
    coef = _coef_member(members)
    entries = [_stored(n, d + bytes(4096) if n == coef else d) for n, d in members.items()]
    path = tmp_path / "long.skops"
    path.write_bytes(_zip(entries))
    with pytest.raises(ModelFileError, match=r"declares \d+ bytes but its array header"):
        load_model(path)


def _member_of(members: dict[str, bytes], key: str) -> str:
    """The member of the array stored under ``key`` anywhere in the schema."""
    import json

    stack = [json.loads(members["schema.json"])]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            got = node.get(key)
            if isinstance(got, dict) and isinstance(got.get("file"), str):
                return got["file"]
            stack.extend(node.values())
    raise AssertionError(key)


def test_a_bomb_in_an_array_no_declaration_describes_is_refused(tmp_path):
    """``cv_results_`` holds arrays whose shapes no declaration gives: a consistent header of a
    gigabyte there is refused by its compression ratio, before it is read."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    task = np.repeat([0, 1], 20)
    cv = MultiTaskCV(L21Regressor(), n_alphas=3).fit(X, X[:, 0] + rng.normal(size=40), task)
    save_model(cv, tmp_path / "cv.skops")
    members = _members(tmp_path / "cv.skops")
    target = _member_of(members, "mean_fit_time")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (GIB // 8,)})
    raw, crc = _zeros_stream(header.getvalue(), GIB)
    entries = [_stored(n, d) for n, d in members.items() if n != target]
    entries.append((target, raw, 8, crc, len(header.getvalue()) + GIB, stat.S_IFREG | 0o600))
    path = tmp_path / "bomb.skops"
    path.write_bytes(_zip(entries))
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ModelFileError, match="more than 100 times its compressed size"):
            load_model(path)
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < 1.0 and peak < 100 * MIB
