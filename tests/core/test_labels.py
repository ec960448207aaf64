"""Names shorten at word boundaries, never in the middle of a word."""

from __future__ import annotations

from graphview.core.labels import elide_name, word_boundaries


def chars(n):
    return lambda text: len(text) <= n


def test_a_name_that_fits_is_kept():
    assert elide_name("encoder.layers.0.norm1.bias", chars(40)) == "encoder.layers.0.norm1.bias"


def test_dotted_names_lose_whole_parts_from_the_left():
    assert elide_name("encoder.layers.0.norm1.bias", chars(20)) == "…layers.0.norm1.bias"
    assert elide_name("encoder.layers.0.norm1.bias", chars(12)) == "…norm1.bias"
    assert elide_name("into encoder.layers.0.linear1.weight.grad", chars(26)) == "into …linear1.weight.grad"


def test_op_names_lose_whole_words_from_the_middle():
    assert elide_name("NativeBatchNormBackward0", chars(18)) == "Native…Backward0"
    short = elide_name("ScaledDotProductEfficientAttentionBackward0", chars(25))
    assert short.startswith("Scaled") and short.endswith("Backward0") and len(short) <= 25


def test_a_box_label_shortens_its_path_and_keeps_its_type():
    assert elide_name("encoder.layers.0 · TransformerEncoderLayer", chars(30)) == "…0 · TransformerEncoderLayer"
    assert elide_name("encoder.layers.0.self_attn · MultiheadAttention", chars(20)) == "…layers.0.self_attn"


def test_a_box_label_with_both_runs_bytes_loses_the_bytes_before_its_type():
    # (the type went with the bytes: 'model.1 · ReLU · 2.0 KiB → 2.0 KiB activations' drawn as 'model.1')
    label = "model.1 · ReLU · 2.0 KiB → 2.0 KiB activations"
    assert elide_name(label, chars(40)) == "model.1 · ReLU · …"
    assert elide_name(label, chars(16)) == "model.1 · ReLU"
    assert elide_name("encoder.layers.0 · TransformerEncoderLayer · 1 KiB → 2 KiB activations", chars(30)) == \
        "…0 · TransformerEncoderLayer"



def test_a_hostile_name_of_thousands_of_parts_shortens_with_a_few_measures():
    """A trace's module path may be 4,096 characters of ' ·' (its strings are hostile): shortening it
    measured a form for each part, one call inside another (a RecursionError, then a crash in
    ``graphview export``); a few forms are measured, then the first two parts'."""
    hostile = "m" + " · x" * 2000
    measured = []

    def fits(text):
        measured.append(text)
        return len(text) <= 12

    short = elide_name(hostile, fits)
    assert len(short) <= 12 and len(measured) < 40
    assert elide_name(hostile, chars(30)) == "m · x"  # (its path and its type)

def test_no_word_is_ever_cut():
    for name in ["encoder.layers.0.norm1.bias", "NativeBatchNormBackward0", "model.blocks.11.attn.c_proj.weight"]:
        words = {name[a:b].strip(".") for a, b in zip(word_boundaries(name), word_boundaries(name)[1:])}
        for width in range(3, len(name)):
            short = elide_name(name, chars(width))
            for piece in short.replace("…", " ").replace(".", " ").split():
                # every piece left is made of whole words of the name
                assert any(piece.startswith(w) for w in words), (name, width, short)


def test_a_recomputed_box_keeps_its_path_s_last_part_and_its_type_before_its_note():
    # the what-if picture showed "encoder.… · MultiheadAttention": the note after the path made it
    # read as words, which lost their end (what the box is) rather than their start
    label = "encoder.layers.0.self_attn (recomputed) · MultiheadAttention"
    assert elide_name(label, chars(52)) == "…0.self_attn (recomputed) · MultiheadAttention"
    assert elide_name(label, chars(43)) == "…layers.0.self_attn · MultiheadAttention"
    assert elide_name(label, chars(31)) == "…self_attn · MultiheadAttention"
    assert elide_name(label, chars(20)) == "…layers.0.self_attn"  # no room for the type: the path


def test_a_box_path_loses_whole_parts_between_its_dots():
    # "c_proj" is one part of the path: never "…proj · Conv1D"
    assert elide_name("model.blocks.11.c_proj · Conv1D", chars(18)) == "…c_proj · Conv1D"
    assert elide_name("model.blocks.11.c_proj · Conv1D", chars(15)) == "…11.c_proj"
