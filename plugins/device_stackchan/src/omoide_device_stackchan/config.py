"""``StackChanConfig``: the ``stackchan`` device's options in the YAML.

Its own module so that the connection and the service can name their settings without
importing the device (which starts the service): nothing here imports the rest of the
plugin except, on first validation, :mod:`.ratelimit`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from omoide.api import DeviceConfig, Secret


class StackChanConfig(DeviceConfig):
    pairing_required: bool = Field(
        True, description="Only paired devices may connect; an unknown device gets an "
                          "activation code to pair with `omoide devices pair --code`.")
    open_user: str | None = Field(
        None, description="Open mode (pairing_required false): user id for unpaired devices;"
                          " null gives each device its own user `device-<id>`.")
    token_secret: Secret = Field(
        None, description="HMAC secret for device tokens, as {$env: NAME}; when absent a "
                          "random one is generated and kept in the plugin's data folder.")
    token_ttl_days: float = Field(30.0, gt=0, description="How long a device token is valid.")
    public_url: str | None = Field(
        None, description="Base URL devices reach the server at (http[s]://host:port); the "
                          "OTA answer derives the WebSocket URL from it. Default: from the "
                          "request's Host header.")
    protocol_version: Literal[1, 2, 3] = Field(
        1, description="Binary framing version the OTA answer tells devices to use.")
    timezone: str = Field("Asia/Tokyo",
                          description="Time zone whose UTC offset the OTA answer reports.")
    hello_timeout_s: float = Field(10.0, gt=0,
                                   description="Close a connection that sends no hello by then.")
    close_after_silence_s: float = Field(
        120.0, gt=0, description="Close the connection after this long without speech.")
    downlink_sample_rate: Literal[8000, 12000, 16000, 24000, 48000] = Field(
        24000, description="Sample rate of reply audio sent to the device (Opus).")
    downlink_frame_ms: Literal[20, 40, 60] = Field(
        60, description="Length of one downlink Opus frame.")
    opus_complexity: int = Field(
        3, ge=0, le=10, description="Opus encoder complexity for reply audio (0-10; higher "
                                    "costs more CPU per device for little audible gain).")
    pre_buffer_frames: int = Field(
        5, ge=1, le=50, description="Frames sent ahead of real time before pacing starts.")
    max_frame_bytes: int = Field(
        4000, ge=256, description="Largest binary (audio) message accepted; larger closes "
                                  "the connection (1009).")
    max_text_bytes: int = Field(
        65536, ge=1024, description="Largest JSON message accepted; larger closes (1009).")
    max_utterance_s: float = Field(30.0, gt=0,
                                   description="Speech longer than this is cut into a turn.")
    pre_roll_ms: int = Field(300, ge=0, description="Audio kept before detected speech start.")
    energy_threshold: float = Field(
        0.015, gt=0, description="RMS that counts as speech when the server has no VAD "
                                 "(fallback end-of-speech detection).")
    energy_silence_ms: int = Field(
        700, ge=100, description="Silence ending speech for the energy fallback.")
    mcp_timeout_s: float = Field(10.0, gt=0,
                                 description="Time the robot has to answer an MCP request.")
    send_timeout_s: float = Field(
        5.0, gt=0, description="A device that does not take a message within this long is "
                               "disconnected (it must not stall others).")
    max_errors: int = Field(20, ge=1,
                            description="Protocol errors tolerated before closing (1008).")
    wake_words: list[str] = Field(
        default_factory=lambda: ["你好小智", "嘿，你好呀", "ハイ スタックチャン", "スタックチャン",
                                 "hi esp", "hi stack chan"],
        description="`listen detect` texts that are always a wake word (compared without "
                    "spaces, punctuation or case). Any `listen detect` sent while the robot "
                    "is not listening is a wake word too (robots report theirs right after "
                    "connecting); other texts are typed utterances and answered.")
    greetings: list[str] = Field(
        default_factory=lambda: ["はーい、なあに？", "うん、どうしたの？", "はい、聞いてるよ。"],
        description="Short lines spoken (one at random) when a robot reports its wake word: "
                    "a greeting, not an answer; nothing is journaled. Empty: stay silent.")
    goodbye: str | None = Field(
        "そろそろ休むね。また話しかけてね。",
        description="Spoken before closing a connection that was silent for "
                    "`close_after_silence_s`, so the robot ends as after any reply; null "
                    "closes without a word.")
    close_grace_s: float = Field(
        1.5, ge=0, le=30,
        description="After the goodbye's `tts stop`, wait this long before closing: "
                    "clients such as py-xiaozhi go back to listening on `tts stop` and "
                    "must not find the socket already closed.")
    stt_partials: bool = Field(
        False, description="While the person speaks, send the part of the transcript the "
                           "recogniser will not revise as `stt` messages (each repeats all "
                           "of it so far), before the final `stt`. Off by default: stock "
                           "clients show every `stt` as a chat bubble of its own. Needs a "
                           "recogniser that streams (`asr: {use: whisper}`).")
    voice_barge_in: bool = Field(
        False, description="Let speech interrupt the robot on devices that don't announce "
                           "echo cancellation (`aec`) in hello, judged on the server: the "
                           "uplink must be `barge_in_margin_db` louder than the echo of our "
                           "own reply for `barge_in_min_ms`. Only for clients that keep "
                           "streaming while they speak (browsers, py-xiaozhi in realtime "
                           "mode); the stock firmware mutes its microphone then.")
    barge_in_margin_db: float = Field(
        10.0, gt=0, le=40, description="How much louder than the estimated echo the uplink "
                                       "must be to count as the user talking over the reply.")
    barge_in_min_ms: int = Field(
        300, ge=60, le=3000, description="How long the uplink must stay that loud before "
                                         "the reply is interrupted.")
    firmware_dir: str | None = Field(
        None, description="Folder of firmware images, one sub-folder per board type "
                          "(`<firmware_dir>/<board.type>/*.bin`); robots on an older "
                          "version of their board's image are offered it at OTA. Null: "
                          "no updates.")
    activation_ttl_minutes: float = Field(
        15.0, gt=0, le=7 * 24 * 60,
        description="An activation code expires this long after its robot last asked.")
    max_pending: int = Field(
        64, ge=1, le=10000,
        description="Activation codes waiting at most (all sources). A code whose robot "
                    "still asks (within a minute) is never pushed out: a quiet one makes "
                    "room, and with none OTA answers 429.")
    max_pending_per_source: int = Field(
        4, ge=1, le=1000, description="Activation codes one source address may hold; "
                                      "beyond, its quiet codes make room, else 429.")
    ota_rate_limit: str = Field(
        "60/minute", description="Requests one source address may make to OTA and "
                                 "activation (e.g. `60/minute`, `5/second`); more get 429.")

    @field_validator("ota_rate_limit")
    @classmethod
    def _rate(cls, v: str) -> str:
        from omoide_device_stackchan.ratelimit import parse_rate
        try:
            parse_rate(v)
        except ValueError as exc:
            raise ValueError(f"ota_rate_limit {v!r} is not a rate like '60/minute'") from exc
        return v

    @field_validator("public_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://", "ws://", "wss://")):
            raise ValueError("public_url must start with http://, https://, ws:// or wss://")
        return v.rstrip("/") if v else v
