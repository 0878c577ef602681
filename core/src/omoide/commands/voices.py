"""``omoide voices``: enrol, list, export and erase voiceprints in a config's data dir.

    omoide voices enrol  --config FILE PERSON WAV... [--replace]
    omoide voices list   --config FILE [--json]
    omoide voices export --config FILE PERSON
    omoide voices erase  --config FILE PERSON

A voiceprint is biometric data of its person: enrolling it from the command line is the
data dir's owner acting (the same as the admin); a running server sees the change at the
robot's next turn. Enrolment embeds each WAV with the config's ``speaker`` stage (a few
sentences of 3-10 s each, one voice, a quiet room); a WAV it cannot use (silence, too
short, clipped, several voices) is refused with its reason. No audio is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from omoide.commands._common import EXIT_FAILED, load_or_exit


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    voices = sub.add_parser("voices", help="voiceprints: enrol, list, export, erase")
    actions = voices.add_subparsers(dest="voices_action", required=True)

    p = actions.add_parser("enrol", help="enrol PERSON's voice from WAV files")
    p.add_argument("--config", required=True, help="config file (YAML) with a speaker stage")
    p.add_argument("--replace", action="store_true",
                   help="replace what was enrolled (default: add to it)")
    p.add_argument("person", metavar="PERSON")
    p.add_argument("wavs", nargs="+", metavar="WAV")
    p.set_defaults(handler=_enrol_command)

    p = actions.add_parser("list", help="who has a voiceprint")
    p.add_argument("--config", required=True, help="config file (YAML)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_list_command)

    p = actions.add_parser("export", help="PERSON's voiceprints as JSON (vectors included)")
    p.add_argument("--config", required=True, help="config file (YAML)")
    p.add_argument("person", metavar="PERSON")
    p.set_defaults(handler=_export_command)

    p = actions.add_parser("erase", help="erase PERSON's voiceprints")
    p.add_argument("--config", required=True, help="config file (YAML)")
    p.add_argument("person", metavar="PERSON")
    p.set_defaults(handler=_erase_command)


def _store(config: str) -> Any:
    from omoide.voices import open_voiceprints

    settings = load_or_exit(config)
    return open_voiceprints(settings.data_dir, settings.envelope.database.url)


def _person(value: str) -> str:
    from omoide.errors import InvalidInput
    from omoide.user_ids import validate_user_id

    try:
        return validate_user_id(value)
    except InvalidInput as exc:
        raise SystemExit(f"omoide voices: {exc}") from None


def _enrol_command(args: argparse.Namespace) -> int:
    from omoide.audio import read_wav
    from omoide.commands._common import report_failures
    from omoide.components.speaker import SpeakerEncoder
    from omoide.errors import InvalidInput
    from omoide.voices import SpeakerIdentifier, open_voiceprints

    person = _person(args.person)
    settings = load_or_exit(args.config)
    choice = settings.components.get("speaker")
    if choice is None:
        print(f"{args.config}: no speaker stage (speaker: {{use: resemblyzer}})",
              file=sys.stderr)
        return EXIT_FAILED
    try:
        clips = [read_wav(Path(path).read_bytes()) for path in args.wavs]
    except (OSError, InvalidInput) as exc:
        print(f"omoide voices enrol: {exc}", file=sys.stderr)
        return EXIT_FAILED
    encoder: SpeakerEncoder = choice.cls(choice.config)  # type: ignore[assignment]

    async def work() -> int:
        await encoder.start()
        try:
            identifier = SpeakerIdentifier(encoder, open_voiceprints(
                settings.data_dir, settings.envelope.database.url))
            enrolment = await identifier.enrol(person, clips, source="cli",
                                               replace=args.replace)
        finally:
            await encoder.stop()
        for index, reason in enrolment.refused:
            print(f"{args.wavs[index]}: not used ({reason.value})", file=sys.stderr)
        if enrolment.voiceprint is None:
            print(f"nothing enrolled for {person}: no WAV was usable", file=sys.stderr)
            return EXIT_FAILED
        print(f"enrolled {person}: {enrolment.used} utterance(s) added, "
              f"{len(enrolment.voiceprint.vectors)} kept ({encoder.model_id})")
        return 0

    return asyncio.run(report_failures(work()))


def _list_command(args: argparse.Namespace) -> int:
    store = _store(args.config)
    rows = [p.to_json(vectors=False) for person in store.people()
            for p in store.voiceprints(person)]
    if args.json:
        print(json.dumps({"voiceprints": rows}, ensure_ascii=False))
        return 0
    if not rows:
        print("no one is enrolled")
    for row in rows:
        print(f"{row['person']}\t{row['model_id']}\t{row['utterances']} utterance(s)\t"
              f"{row['source']}\t{row['enrolled_at']}")
    return 0


def _export_command(args: argparse.Namespace) -> int:
    print(json.dumps(_store(args.config).export(_person(args.person)), ensure_ascii=False))
    return 0


def _erase_command(args: argparse.Namespace) -> int:
    person = _person(args.person)
    count = _store(args.config).erase(person)
    print(f"erased {count} voiceprint(s) of {person}" if count else
          f"{person} has no voiceprint")
    return 0
