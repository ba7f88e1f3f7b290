"""The ``fragfs_tile`` numcodecs codec (``fragfs.codec.FragfsTile``) against every
distinct filter pipeline of the shared corpus and of the fixtures: for each combination
of (pipeline, datatype, cell size, format version, dense or sparse, cell order) of a
fixed-size stored field's tiles (attributes, sparse fragments' dimensions, validity),
every tile of the first fragment that has it, read from its file at the offset
``fragfs.stored_tiles`` gives and decoded by the codec, equals the matching bytes of the
fragment's ``values.bin`` (or ``validity.bin``) as ``Tree.cat`` reads them (row-major
where the tile is column-major). Without the corpus (``../shared/corpus``) that part
skips, saying so; the fixtures always run."""

import json

import numcodecs
import numpy as np
import pytest

import fragfs
from fragfs.codec import FragfsTile
from conftest import FIXTURES, REPO, required

CORPUS = REPO.parent / "shared" / "corpus" / "tiledb"


def arrays(folder):
    """The arrays of a folder of fixtures or of the corpus with their expected JSON,
    encrypted ones left out (their tiles are never referenced)."""
    out = []
    for expected in sorted(folder.glob("**/*.expected.json")):
        doc = json.loads(expected.read_text())
        if doc.get("encryption"):
            continue
        array = expected.parent / expected.name[: -len(".expected.json")]
        if array.is_dir() and not (array / "__group").exists():
            out.append(array)
    return out


def combination(codec):
    """What sets a tile codec's decoding apart (not its shape)."""
    return (codec["pipeline"], codec["datatype"], codec["cell_size"], codec["format_version"],
            codec["cell_order"], len(codec["tile_shape"]) > 1)


def first_of_each(arrays):
    """Per combination, the first field (and its array) whose tiles have it."""
    chosen = {}
    for array in arrays:
        for field in fragfs.stored_tiles(str(array)):
            if not field["tiles"]:
                continue
            key = combination(field["tiles"][0]["codec"])
            chosen.setdefault(key, (array, field))
    return chosen


def row_major(raw, codec):
    """A column-major tile's cells (as values.bin holds them) in row-major order."""
    if codec["cell_order"] != "col-major":
        return raw
    cells = np.frombuffer(raw, dtype=np.dtype((np.void, codec["cell_size"])))
    return cells.reshape(codec["tile_shape"], order="F").ravel(order="C").tobytes()


def check_field(array, field):
    tree = fragfs.Tree(str(array))
    file = "validity.bin" if field["validity"] else "values.bin"
    at = 0
    for k, tile in enumerate(field["tiles"]):
        codec = numcodecs.get_codec(tile["codec"])
        assert isinstance(codec, FragfsTile)
        with open(tile["url"], "rb") as f:
            f.seek(tile["offset"])
            stored = f.read(tile["length"])
        size = tile["codec"]["decoded_size"]
        want = row_major(tree.cat("%s/%s" % (field["path"], file), at, at + size), tile["codec"])
        got = bytes(codec.decode(stored))
        assert got == want, "%s: %s tile %d (%s)" % (array, field["path"], k, tile["codec"]["filters"])
        at += size
    assert at == tree.info("%s/%s" % (field["path"], file))["size"], "%s: %s" % (array, field["path"])
    return len(field["tiles"])


def check_all(folder):
    chosen = first_of_each(arrays(folder))
    assert chosen, "no tile in %s" % folder
    tiles = sum(check_field(array, field) for array, field in chosen.values())
    print("%s: %d combinations, %d tiles" % (folder, len(chosen), tiles))
    return chosen


def test_the_codec_decodes_every_pipeline_of_the_fixtures():
    chosen = check_all(FIXTURES)
    pipelines = {tuple(f["tiles"][0]["codec"]["filters"]) for _, f in chosen.values()}
    for p in [("ZSTD",), ("BYTESHUFFLE", "DOUBLE_DELTA", "ZSTD"), ("CHECKSUM_MD5",), ()]:
        assert p in pipelines, p


def test_the_codec_decodes_every_pipeline_of_the_corpus():
    if not CORPUS.is_dir():
        required("no shared corpus at %s" % CORPUS)
    chosen = check_all(CORPUS)
    filters = {name for _, f in chosen.values() for name in f["tiles"][0]["codec"]["filters"]}
    # Every filter the corpus writes on fixed-size fields (DICTIONARY is for strings).
    for name in ["GZIP", "ZSTD", "LZ4", "RLE", "BZIP2", "DOUBLE_DELTA", "BIT_WIDTH_REDUCTION",
                 "BITSHUFFLE", "BYTESHUFFLE", "POSITIVE_DELTA", "CHECKSUM_MD5",
                 "CHECKSUM_SHA256", "SCALE_FLOAT", "XOR", "DELTA"]:
        assert name in filters, name
    versions = {key[3] for key in chosen}
    assert versions >= set(range(2, 23)) - {1}, sorted(versions)


def test_the_codec_refuses_what_is_not_its_tile():
    (field,) = [f for f in fragfs.stored_tiles(str(FIXTURES / "tiledb" / "dense_2d"))
                if f["field"] == "bs_dd_zstd" and f["fragment"].startswith("__1_1_")]
    tile = field["tiles"][0]
    codec = FragfsTile(**tile["codec"])
    assert codec.get_config() == tile["codec"]
    assert numcodecs.get_codec(codec.get_config()) == codec
    with open(tile["url"], "rb") as f:
        f.seek(tile["offset"])
        stored = f.read(tile["length"])
    with pytest.raises(ValueError, match="fragfs_tile"):
        codec.decode(stored[:-3])
    with pytest.raises(ValueError, match="not one whole stored tile"):
        codec.decode(stored + b"\0")
    with pytest.raises(ValueError, match="ZSTD"):
        codec.decode(stored[:24] + bytes(len(stored) - 24))
    with pytest.raises(NotImplementedError, match="read-only"):
        codec.encode(np.zeros(12, dtype="i4"))
    with pytest.raises(ValueError, match="unknown key"):
        FragfsTile(**tile["codec"], level=3)
    enveloped = b"fragfs\x01\xff" + bytes(range(48))
    assert bytes(codec.decode(enveloped)) == bytes(range(48))
    out = np.empty(12, dtype="i4")
    codec.decode(enveloped, out=out)
    assert out.tobytes() == bytes(range(48))


def test_the_codec_pickles_by_its_configuration():
    """Dask ships a graph's codecs to its worker processes by pickling them."""
    import pickle

    (field,) = [f for f in fragfs.stored_tiles(str(FIXTURES / "tiledb" / "dense_2d"))
                if f["field"] == "bs_dd_zstd" and f["fragment"].startswith("__1_1_")]
    tile = field["tiles"][0]
    codec = FragfsTile(**tile["codec"])
    again = pickle.loads(pickle.dumps(codec))
    assert isinstance(again, FragfsTile) and again == codec
    with open(tile["url"], "rb") as f:
        f.seek(tile["offset"])
        stored = f.read(tile["length"])
    assert bytes(again.decode(stored)) == bytes(codec.decode(stored))


def test_decoded_chunks_share_no_memory_while_alive():
    """The codec hands numpy its decoder's buffer (no copy) and reuses a buffer once
    its last array is gone: an array still alive must never be written by a later
    decode, and a reused buffer must hold the new tile whole."""
    fields = [f for f in fragfs.stored_tiles(str(FIXTURES / "tiledb" / "dense_2d"))
              if f["tiles"] and not f["validity"]]
    assert len(fields) >= 2
    tree = fragfs.Tree(str(FIXTURES / "tiledb" / "dense_2d"))
    tiles = []
    for field in fields:
        at = 0
        for tile in field["tiles"]:
            size = tile["codec"]["decoded_size"]
            want = row_major(tree.cat("%s/values.bin" % field["path"], at, at + size), tile["codec"])
            with open(tile["url"], "rb") as f:
                f.seek(tile["offset"])
                tiles.append((FragfsTile(**tile["codec"]), f.read(tile["length"]), want))
            at += size
    kept = [(codec.decode(stored), want) for codec, stored, want in tiles]
    assert all(arr.tobytes() == want for arr, want in kept)
    assert not any(arr.flags.writeable for arr, _ in kept)
    # Decoding again while they live, and again after each is dropped.
    for _ in range(2):
        for codec, stored, want in tiles:
            again = codec.decode(stored)
            assert again.tobytes() == want
            del again
    assert all(arr.tobytes() == want for arr, want in kept)
    del kept
    for codec, stored, want in reversed(tiles):
        assert codec.decode(stored).tobytes() == want
