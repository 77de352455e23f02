"""Projection and attention shapes derived from config numbers equal the hand-computed ones."""

from collector.kernels.model_shapes import MODELS, attention_shapes, linear_shapes, model, projection_shapes


def test_llama_3_1_8b_projections_by_hand():
    # hidden 4096, intermediate 14336, 32 heads x 128, 8 kv heads x 128, vocab 128256
    assert projection_shapes(model("Llama-3.1-8B")) == {
        "q": (4096, 4096),
        "k_v": (4096, 1024),
        "o": (4096, 4096),
        "gate_up": (4096, 14336),
        "down": (14336, 4096),
        "lm_head": (4096, 128256),
    }


def test_qwen3_0_6b_projections_by_hand():
    # hidden 1024 but 16 heads x 128 = 2048: q widens, o narrows back
    assert projection_shapes(model("Qwen3-0.6B")) == {
        "q": (1024, 2048),
        "k_v": (1024, 1024),
        "o": (2048, 1024),
        "gate_up": (1024, 3072),
        "down": (3072, 1024),
        "lm_head": (1024, 151936),
    }


def test_gpt_oss_projections_by_hand():
    # 64 heads x 64 = 4096 from hidden 2880; gate_up and down are both 2880 x 2880
    shapes = projection_shapes(model("gpt-oss-20b"))
    assert shapes["q"] == (2880, 4096) and shapes["k_v"] == (2880, 512) and shapes["o"] == (4096, 2880)
    assert shapes["gate_up"] == shapes["down"] == (2880, 2880) and shapes["lm_head"] == (2880, 201088)


def test_linear_shapes_are_unique_and_keep_every_user():
    shapes = linear_shapes()
    kn = [(s.K, s.N) for s in shapes]
    assert len(kn) == len(set(kn))
    all_users = [u for s in shapes for u in s.users]
    assert len(all_users) == len(MODELS) * 6  # every model's six projections land in exactly one shape
    square_4096 = next(s for s in shapes if (s.K, s.N) == (4096, 4096))
    assert square_4096.users[0] == ("Llama-3.1-8B", "q")
    assert ("Mistral-7B", "o") in square_4096.users and ("Qwen3-8B", "q") in square_4096.users
    assert "Qwen3-8B:o" in square_4096.used_by


def test_attention_shapes_cover_the_gqa_ratios():
    ratios = {(a.heads, a.kv_heads) for a in attention_shapes()}
    assert {(32, 8), (24, 8), (16, 8), (64, 8)} <= ratios
    head_dims = {a.head_dim for a in attention_shapes()}
    assert head_dims == {64, 128}
