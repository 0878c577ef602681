"""The two shipped configs: offline runs anywhere; default fails fast and says why."""

from __future__ import annotations

import time


def test_offline_config_is_valid_without_any_secret(omoide_cli, configs, no_secrets) -> None:  # type: ignore[no-untyped-def]
    out = omoide_cli("config", "check", str(configs / "offline.yaml"), env=no_secrets)
    assert out.returncode == 0, out.stderr


def test_default_config_without_keys_names_the_env_var(omoide_cli, configs, no_secrets) -> None:  # type: ignore[no-untyped-def]
    out = omoide_cli("config", "check", str(configs / "default.yaml"), env=no_secrets)
    assert out.returncode == 2
    assert "MODELSCOPE_API_KEY is not set" in out.stderr
    assert "chat.api_key" in out.stderr and "embed.fallback.api_key" in out.stderr


def test_default_config_is_otherwise_valid(omoide_cli, configs) -> None:
    out = omoide_cli("config", "check", str(configs / "default.yaml"),
                     env={"MODELSCOPE_API_KEY": "test-key"})
    assert out.returncode == 0, out.stderr


def test_serving_default_without_keys_stops_at_once_with_the_fix(omoide_cli, configs,
        no_secrets: dict[str, str]) -> None:
    out = omoide_cli("serve", "--config", str(configs / "default.yaml"), env=no_secrets,
                     timeout=60)
    assert out.returncode == 2
    assert "MODELSCOPE_API_KEY" in out.stderr and "Traceback" not in out.stderr


def test_serving_default_without_weights_stops_within_seconds_naming_the_download(
        omoide_cli, configs, free_port, tmp_path) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    out = omoide_cli("serve", "--config", str(configs / "default.yaml"),
                     "--host", "127.0.0.1", "--port", str(free_port),
                     env={"MODELSCOPE_API_KEY": "test-key", "HF_HUB_OFFLINE": "1"},
                     cwd=tmp_path, timeout=120)
    elapsed = time.monotonic() - started
    assert out.returncode == 1, out.stderr[-2000:]
    assert "omoide download" in out.stderr
    assert "Qwen/Qwen3-ASR-0.6B" in out.stderr or "Qwen/Qwen3-Embedding-0.6B" in out.stderr
    assert "Traceback" not in out.stderr
    print(f"default.yaml stopped after {elapsed:.1f}s")
