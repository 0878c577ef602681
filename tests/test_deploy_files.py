"""The deployment files (docs/deploy.md): deploy/compose.yaml cannot be run here (no
Docker), so it is checked as what it is: YAML whose omoide workers each mount the one
config, deploy/omoide.yaml, with a data dir of their own, and that config is valid for
omoide's own config loader (every plugin it names installed, every field known)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from omoide.config_loading import load_settings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
ENVIRONMENT = {"OMOIDE_DATABASE_URL": "postgresql://omoide:secret@postgres:5432/omoide",
               "QDRANT_API_KEY": "qdrant-key", "MODELSCOPE_API_KEY": "ms-key"}


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text("utf-8"))
    return loaded


def workers() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose()["services"].items()
            if name.startswith("omoide-")}


def test_the_compose_file_has_the_documented_topology() -> None:
    services = set(compose()["services"])
    assert {"lb", "postgres", "postgres-replica", "qdrant-1", "qdrant-2", "qdrant-3",
            "qdrant-init"} <= services
    assert len(workers()) >= 3


def test_each_worker_mounts_the_one_config_and_a_data_dir_of_its_own() -> None:
    data_volumes = []
    for service in workers().values():
        mounts = dict(m.split(":", 2)[:2][::-1] for m in service["volumes"])
        assert mounts["/etc/omoide/omoide.yaml"] == "./omoide.yaml"
        data_volumes.append(mounts["/var/lib/omoide"])
    assert len(set(data_volumes)) == len(data_volumes)


def test_every_environment_variable_the_config_reads_is_given_to_the_workers() -> None:
    text = (DEPLOY / "omoide.yaml").read_text("utf-8")
    for service in workers().values():
        for name in ENVIRONMENT:
            assert (f"$env: {name}" in text) <= (name in service["environment"])


def test_the_workers_config_is_valid_for_omoides_config_loader() -> None:
    settings = load_settings(DEPLOY / "omoide.yaml", environ=ENVIRONMENT)
    database = settings.envelope.database
    assert database.url is not None and database.url.startswith("postgresql://")
    assert settings.data_dir == Path("/var/lib/omoide")
    store = settings.envelope.store
    assert store is not None and store.use == "qdrant"
    assert store.url == "http://qdrant-1:6333"  # a server: the tenant-indexed collection
