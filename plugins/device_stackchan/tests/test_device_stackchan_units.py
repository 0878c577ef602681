"""Protocol units: framing, tokens, emotion faces, pairing store, Opus, end of speech."""

from __future__ import annotations

import json
import math
import multiprocessing
import struct
from pathlib import Path

import numpy as np
import pytest

from omoide.types import AudioClip, Emotion
from omoide_device_stackchan import framing
from omoide_device_stackchan.bargein import EchoGate
from omoide_device_stackchan.codec import OpusDecoder, OpusEncoder
from omoide_device_stackchan.emotions import STACKCHAN_FACES, stackchan_face
from omoide_device_stackchan.listening import EnergyEndOfSpeech, UtteranceBuffer
from omoide_device_stackchan.pairing import PairingError, PairingStore, PendingPoolFull
from omoide_device_stackchan.tokens import TokenSigner, bearer_token, load_or_create_secret

SECRET = b"0123456789abcdef0123456789abcdef"


# -- framing ---------------------------------------------------------------------------
def test_v1_is_the_raw_opus_packet() -> None:
    assert framing.encode(1, b"abc") == b"abc"
    assert framing.decode(1, b"abc") == framing.BinaryMessage(framing.TYPE_OPUS, b"abc")


def test_v2_header_is_16_bytes_network_order() -> None:
    data = framing.encode(2, b"xyz", timestamp_ms=0x01020304)
    assert data[:16] == struct.pack(">HHIII", 2, 0, 0, 0x01020304, 3)
    assert framing.decode(2, data) == framing.BinaryMessage(0, b"xyz", 0x01020304)


def test_v3_header_is_4_bytes_network_order() -> None:
    data = framing.encode(3, b"\x01" * 300, type=framing.TYPE_JSON)
    assert data[:4] == b"\x01\x00\x01\x2c"
    assert framing.decode(3, data).type == framing.TYPE_JSON


@pytest.mark.parametrize(("version", "data"), [
    (2, b"\x00\x02"),                                          # shorter than the header
    (2, struct.pack(">HHIII", 3, 0, 0, 0, 0)),                 # header names version 3
    (2, struct.pack(">HHIII", 2, 0, 0, 0, 9) + b"abc"),        # size disagrees
    (3, struct.pack(">BBH", 7, 0, 1) + b"a"),                  # unknown type
    (3, b"\x00"),
])
def test_malformed_binary_frames_are_framing_errors(version: int, data: bytes) -> None:
    with pytest.raises(framing.FramingError):
        framing.decode(version, data)


@pytest.mark.parametrize(("header", "version"), [(None, 1), ("", 1), ("2", 2), (" 3 ", 3)])
def test_protocol_version_header(header: str | None, version: int) -> None:
    assert framing.parse_version(header) == version


@pytest.mark.parametrize("header", ["4", "0", "two"])
def test_unsupported_protocol_versions_are_refused(header: str) -> None:
    with pytest.raises(framing.FramingError):
        framing.parse_version(header)


# -- tokens ----------------------------------------------------------------------------
def test_token_checks_for_the_device_it_was_issued_to() -> None:
    signer = TokenSigner(SECRET, ttl_s=3600)
    token = signer.issue("client-1", "AA:BB:CC:DD:EE:FF", now=1000)
    assert signer.check(token, "client-1", "aa:bb:cc:dd:ee:ff", now=1001).ok


@pytest.mark.parametrize(("client", "device"), [("client-2", "aa:bb:cc:dd:ee:ff"),
                                                ("client-1", "aa:bb:cc:dd:ee:00")])
def test_token_of_another_client_or_device_is_refused(client: str, device: str) -> None:
    signer = TokenSigner(SECRET, ttl_s=3600)
    token = signer.issue("client-1", "aa:bb:cc:dd:ee:ff", now=1000)
    assert not signer.check(token, client, device, now=1001).ok


def test_token_expires_after_its_ttl() -> None:
    signer = TokenSigner(SECRET, ttl_s=30 * 86400)
    token = signer.issue("c", "d", now=0)
    assert signer.check(token, "c", "d", now=29 * 86400).ok
    result = signer.check(token, "c", "d", now=31 * 86400)
    assert not result.ok and result.reason == "token expired"


def test_token_signed_with_another_secret_is_refused() -> None:
    token = TokenSigner(b"x" * 32, 3600).issue("c", "d", now=0)
    assert not TokenSigner(SECRET, 3600).check(token, "c", "d", now=1).ok


def test_tampered_issue_time_is_refused() -> None:
    signer = TokenSigner(SECRET, ttl_s=3600)
    mac, _, _ = signer.issue("c", "d", now=0).partition(".")
    assert not signer.check(f"{mac}.999999", "c", "d", now=1).ok


@pytest.mark.parametrize("token", [None, "", "no-dot", "abc.notanumber"])
def test_missing_or_malformed_tokens_are_refused(token: str | None) -> None:
    assert not TokenSigner(SECRET, 3600).check(token, "c", "d").ok


@pytest.mark.parametrize(("header", "token"), [("Bearer abc.1", "abc.1"), ("bearer abc.1",
                                                "abc.1"), ("abc.1", "abc.1"), (None, None)])
def test_bearer_prefix_is_optional(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_generated_secret_is_kept_private_and_reused(tmp_path: Path) -> None:
    first = load_or_create_secret(tmp_path / "secret")
    assert load_or_create_secret(tmp_path / "secret") == first
    assert (tmp_path / "secret").stat().st_mode & 0o077 == 0


# -- emotions --------------------------------------------------------------------------
@pytest.mark.parametrize("emotion", list(Emotion))
def test_every_omoide_emotion_maps_to_one_of_the_eight_faces(emotion: Emotion) -> None:
    assert stackchan_face(emotion) in STACKCHAN_FACES


@pytest.mark.parametrize(("emotion", "face"), [
    (Emotion.THINKING, "doubtful"), ("confused", "doubtful"), (Emotion.LOVING, "happy"),
    ("funny", "laughing"), (Emotion.SLEEPY, "sleepy"), (Emotion.CRYING, "crying"),
    ("joy", "happy"), ("no-such-feeling", "neutral"), (None, "neutral")])
def test_face_mapping(emotion: Emotion | str | None, face: str) -> None:
    assert stackchan_face(emotion) == face


def test_the_eight_faces_are_exactly_what_stackchan_accepts() -> None:
    assert set(STACKCHAN_FACES) == {"neutral", "happy", "laughing", "angry", "sad", "crying",
                                    "sleepy", "doubtful"}


# -- pairing ---------------------------------------------------------------------------
def test_pairing_binds_a_device_to_a_user(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    store.pair("AA:BB:CC:00:00:01", "hanako")
    pairing = PairingStore(tmp_path).get("aa:bb:cc:00:00:01")
    assert pairing is not None and pairing.user == "hanako" and pairing.active


def test_revoked_pairing_is_inactive(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    store.pair("d1", "hanako")
    store.revoke("d1")
    assert not PairingStore(tmp_path).get("d1").active  # type: ignore[union-attr]


def test_revoking_an_unknown_device_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PairingError):
        PairingStore(tmp_path).revoke("nope")


def test_activation_code_is_stable_while_the_device_waits(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    first = store.request_activation("d1", "c1")
    assert store.request_activation("d1", "c1").code == first.code
    assert len(first.code) == 6 and first.code.isdigit()


def test_pairing_by_activation_code_consumes_the_code(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    code = store.request_activation("d1", "c1").code
    pairing = store.pair_by_code(code, "taro")
    assert pairing.device_id == "d1" and pairing.client_id == "c1"
    assert store.pending() == []
    with pytest.raises(PairingError):
        store.pair_by_code(code, "taro")


@pytest.mark.parametrize("user", ["", "a/b", "x" * 65, "tab\there"])
def test_bad_user_ids_are_refused(tmp_path: Path, user: str) -> None:
    with pytest.raises(PairingError):
        PairingStore(tmp_path).pair("d1", user)


def test_a_reader_sees_changes_made_by_another_writer(tmp_path: Path) -> None:
    server_view = PairingStore(tmp_path)
    assert server_view.get("d1") is None
    PairingStore(tmp_path).pair("d1", "hanako")      # e.g. the CLI
    assert server_view.get("d1") is not None


def _pair_many(directory: str, start: int) -> None:
    store = PairingStore(Path(directory))
    for i in range(start, start + 20):
        store.pair(f"dev-{i}", f"user-{i}")


def test_concurrent_writers_lose_no_pairing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_pair_many, args=(str(tmp_path), s)) for s in (0, 100, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert len(PairingStore(tmp_path).pairings()) == 60
    json.loads((tmp_path / "pairings.json").read_text())   # never a torn file


# -- Opus ------------------------------------------------------------------------------
def test_opus_round_trip_keeps_the_signal() -> None:
    rate = 24000
    t = np.arange(rate, dtype=np.float32) / rate
    clip = AudioClip((0.3 * np.sin(2 * math.pi * 440 * t)).astype(np.float32), rate)
    encoder, decoder = OpusEncoder(rate, 60), OpusDecoder(rate)
    packets = list(encoder.frames(clip))
    assert len(packets) == encoder.frame_count(clip) == 17
    out = np.concatenate([decoder.decode(p) for p in packets])
    assert len(out) == 17 * 1440
    assert abs(float(np.sqrt(np.mean(out ** 2))) - 0.3 / math.sqrt(2)) < 0.05


def test_encoder_resamples_other_rates() -> None:
    clip = AudioClip(np.zeros(16000, dtype=np.float32), 16000)
    assert len(list(OpusEncoder(24000, 60).frames(clip))) == 17


def test_corrupt_opus_is_invalid_input() -> None:
    from omoide.errors import InvalidInput
    with pytest.raises(InvalidInput):
        OpusDecoder(16000).decode(b"\xff\xfe\xfd garbage")


# -- listening -------------------------------------------------------------------------
def _burst(seconds: float, amp: float) -> np.ndarray:
    t = np.arange(int(seconds * 16000), dtype=np.float32) / 16000
    return (amp * np.sin(2 * math.pi * 200 * t)).astype(np.float32)


def test_energy_detector_reports_speech_start_and_end() -> None:
    detector = EnergyEndOfSpeech(min_silence_ms=300)
    events = detector.push(np.concatenate([np.zeros(8000, np.float32), _burst(1.0, 0.2),
                                           np.zeros(8000, np.float32)]))
    assert [e.kind for e in events] == ["speech_start", "speech_end"]
    assert abs(events[0].at_s - 0.5) < 0.04 and abs(events[1].at_s - 1.5) < 0.04


def test_energy_detector_ignores_clicks() -> None:
    detector = EnergyEndOfSpeech(min_silence_ms=300, min_speech_ms=200)
    events = detector.push(np.concatenate([_burst(0.06, 0.3), np.zeros(16000, np.float32)]))
    assert [e.kind for e in events] == ["speech_start"]
    assert not detector.in_speech


def test_utterance_buffer_keeps_only_what_is_asked_for() -> None:
    buffer = UtteranceBuffer()
    for i in range(10):
        buffer.append(np.full(100, i, dtype=np.float32))
    buffer.drop_before(550)
    assert buffer.take(500, 700).tolist() == [5.0] * 100 + [6.0] * 100
    assert buffer.kept_seconds == 500 / 16000


def test_one_source_holds_at_most_its_share_of_pending_codes(tmp_path: Path) -> None:
    store = PairingStore(tmp_path, max_per_source=4)
    robot = store.request_activation("aa:bb:cc:00:00:01", "c-robot", source="10.0.0.5").code
    refused = 0
    for i in range(64):
        try:
            store.request_activation(f"02:00:00:00:00:{i:02x}", f"c-{i}", source="10.0.0.66")
        except PendingPoolFull:
            refused += 1
    pending = store.pending()
    assert robot in {p.code for p in pending}
    assert sum(p.source == "10.0.0.66" for p in pending) == 4 and refused == 60


def test_when_full_a_new_code_is_refused_while_every_robot_still_asks(
        tmp_path: Path) -> None:
    store = PairingStore(tmp_path, max_pending=6, max_per_source=4)
    robot = store.request_activation("aa:bb:cc:00:00:01", "c-robot", source="10.0.0.5").code
    for i in range(4):
        store.request_activation(f"02:00:00:00:07:{i:02x}", "c", source="10.0.0.7")
    store.request_activation("02:00:00:00:08:00", "c", source="10.0.0.8")
    with pytest.raises(PendingPoolFull) as refused:
        store.request_activation("02:00:00:00:08:01", "c", source="10.0.0.8")
    assert refused.value.retry_after_s >= 1
    pending = store.pending()
    assert len(pending) == 6
    assert robot in {p.code for p in pending}


def test_a_code_expires_after_its_robot_stops_asking(tmp_path: Path) -> None:
    store = PairingStore(tmp_path, activation_ttl_s=60)
    first = store.request_activation("d1", "c1", now=1000.0)
    again = store.request_activation("d1", "c1", now=1050.0)     # still asking
    assert again.code == first.code and again.expires_at == 1110.0
    assert store.pending(now=1109.0) and not store.pending(now=1111.0)


def test_the_same_device_id_with_another_client_gets_another_code(tmp_path: Path) -> None:
    store = PairingStore(tmp_path)
    mine = store.request_activation("d1", "c-real")
    theirs = store.request_activation("d1", "c-other")
    assert mine.code != theirs.code and mine.challenge != theirs.challenge


# -- echo gate (voice barge-in without AEC) ---------------------------------------------
def _frames(level: float, count: int) -> list[np.ndarray]:
    return [_burst(0.06, level * math.sqrt(2)) for _ in range(count)]


def _run_gate(gate: EchoGate, reply_level: float, mic: list[np.ndarray]) -> list[bool]:
    fired, now = [], 100.0
    for frame in mic:
        gate.played(reply_level, now + 0.06)          # the robot plays a frame...
        fired.append(gate.push(frame, now))          # ...and the mic hears the room
        now += 0.06
    return fired


def test_the_echo_gate_never_fires_on_the_replys_own_echo() -> None:
    gate = EchoGate(margin_db=10, min_ms=300)
    assert not any(_run_gate(gate, 0.2, _frames(0.2 * 0.6, 60)))


def test_the_echo_gate_fires_once_the_user_is_clearly_louder_for_long_enough() -> None:
    gate = EchoGate(margin_db=10, min_ms=300)
    fired = _run_gate(gate, 0.2, _frames(0.02, 20) + _frames(0.3, 10))
    assert not any(fired[:20]) and fired[-1]
    assert fired.index(True) - 20 == 4            # 5 frames of 60 ms = 300 ms
    assert len(gate.recent()) >= 5 * 960            # the start of what the user said


def test_the_echo_gate_waits_for_calibration_and_ignores_a_short_clap() -> None:
    early = EchoGate(margin_db=10, min_ms=300, calibration_ms=480)
    assert not any(_run_gate(early, 0.2, _frames(0.3, 7)))     # 420 ms: not calibrated
    clap = EchoGate(margin_db=10, min_ms=300)
    assert not any(_run_gate(clap, 0.2, _frames(0.02, 20) + _frames(0.5, 2)
                             + _frames(0.02, 10)))
