"""Fixtures: a tiny random Qwen3-ASR saved the way Qwen3-ASR is shipped, built with
qwen-asr's own classes (config, model, processor)."""

from __future__ import annotations

from pathlib import Path

import pytest

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|audio_start|>", "<|audio_end|>",
            "<|audio_pad|>", "<asr_text>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}"
    "{{ m['content'] }}{% else %}{% for c in m['content'] %}{% if c['type'] == 'audio' %}"
    "<|audio_start|><|audio_pad|><|audio_end|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}"
    "{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}")


def build_tiny_qwen3_asr(target: Path) -> Path:
    """Audio encoder 2 layers d_model 64, text decoder 2 layers hidden 64, a byte-level BPE
    tokenizer with Qwen3-ASR's special tokens, a 128-mel Whisper feature extractor.

    The output head is rigged so greedy decoding emits only the full-width tokens "Ａ" and
    "１" (random weights would emit special tokens, which decode to nothing): the final
    norm keeps one hidden unit, whose sign picks one of the two.
    """
    import torch
    from qwen_asr.core.transformers_backend import (
        Qwen3ASRConfig,
        Qwen3ASRForConditionalGeneration,
        Qwen3ASRProcessor,
    )
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2TokenizerFast, WhisperFeatureExtractor

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["language Japanese", "ＡＡ１１ こんにちは", "system user"] * 3,
                            trainer)
    fast = Qwen2TokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        extra_special_tokens={"audio_token": "<|audio_pad|>",
                              "audio_bos_token": "<|audio_start|>",
                              "audio_eos_token": "<|audio_end|>"})
    processor = Qwen3ASRProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=128),
                                  tokenizer=fast, chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(target)
    config = Qwen3ASRConfig(
        thinker_config={
            "audio_config": {"num_mel_bins": 128, "encoder_layers": 2,
                             "encoder_attention_heads": 4, "encoder_ffn_dim": 128,
                             "d_model": 64, "n_window": 50, "n_window_infer": 100,
                             "output_dim": 64, "downsample_hidden_size": 32},
            "text_config": {"vocab_size": len(fast), "hidden_size": 64,
                            "intermediate_size": 128, "num_hidden_layers": 2,
                            "num_attention_heads": 4, "num_key_value_heads": 2,
                            "head_dim": 16,
                            "rope_scaling": {"rope_type": "default", "mrope_section": [4, 2, 2],
                                             "interleaved": True}},
            "audio_token_id": fast.convert_tokens_to_ids("<|audio_pad|>"),
            "audio_start_token_id": fast.convert_tokens_to_ids("<|audio_start|>")},
        support_languages=["Japanese", "English"])
    torch.manual_seed(0)
    model = Qwen3ASRForConditionalGeneration(config)
    (wide_a,) = fast.encode("Ａ", add_special_tokens=False)
    (wide_1,) = fast.encode("１", add_special_tokens=False)
    with torch.no_grad():
        thinker = model.thinker
        thinker.model.norm.weight.zero_()
        thinker.model.norm.weight[0] = 1.0
        thinker.lm_head.weight.zero_()
        thinker.lm_head.weight[wide_a, 0] = 1.0
        thinker.lm_head.weight[wide_1, 0] = -1.0
    model.save_pretrained(target)
    return target


@pytest.fixture(scope="session")
def tiny_asr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen3_asr(tmp_path_factory.mktemp("Qwen3-ASR-tiny"))
