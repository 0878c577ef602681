"""Fixtures: a tiny random Qwen3 model saved the way Qwen3-Embedding is shipped, and
real local HTTP servers (``serve_app``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide.testing.http import serve_app_fixture

CORPUS = ["今日はいい天気", "hello world", "箱根に行く", "ラーメンが好き", "来週の土曜日",
          "友達と旅行", "Instruct: Given a web search query\nQuery:週末の予定"] * 4


def build_tiny_qwen3_embedding(target: Path) -> Path:
    """A byte-level BPE tokenizer that appends <|endoftext|>, and a 2-layer hidden-64
    Qwen3 model, both saved with save_pretrained into ``target``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    eos = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", pair="$A <|endoftext|> $B <|endoftext|>",
        special_tokens=[("<|endoftext|>", eos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>")
    fast.save_pretrained(target)
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(fast), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16, max_position_embeddings=1024,
                         eos_token_id=eos, pad_token_id=eos)
    Qwen3Model(config).save_pretrained(target)
    return target


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen3_embedding(tmp_path_factory.mktemp("Qwen3-Embedding-tiny"))


serve_app = serve_app_fixture()
