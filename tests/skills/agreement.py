#!/usr/bin/env python3
"""kiwi and skills-ref (the Agent Skills specification's reference validator) agree.

Every SKILL.md of ../shared/corpus/skills/, and a set of made-up skills that each break one
rule of the specification (or sit on its limit), are validated by both: `skills-ref
validate DIR` and `kiwi check --format json DIR/SKILL.md`. Each skills-ref error is mapped to
the kiwi code grounded in the same function of skills-ref's validator.py (S801-S806); for
every skill both must report the same set of codes. skills-ref's "Unexpected fields" is the
one rule kiwi does not follow as an error (the clients read documented keys of their own:
kiwi knows those, and hints S809 about any other), so it is compared with S809 instead.

Usage: KIWI_BIN=target/release/kiwi SKILLS_REF=target/skills-ref-venv/bin/skills-ref \
       python3 tests/skills/agreement.py [CORPUS]
Prints the figures and 'N passed, N failed'; exits 1 on any disagreement.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIWI = os.environ.get("KIWI_BIN", str(ROOT / "target/debug/kiwi"))
SKILLS_REF = os.environ.get("SKILLS_REF", str(ROOT / "target/skills-ref-venv/bin/skills-ref"))

# skills-ref's messages (validator.py, parser.py) -> the kiwi code of the same rule.
MESSAGES = [
    ("must start with YAML frontmatter", "S801"),
    ("frontmatter not properly closed", "S801"),
    ("Invalid YAML in frontmatter", "S801"),
    ("frontmatter must be a YAML mapping", "S801"),
    ("Missing required field in frontmatter", "S802"),
    ("must be a non-empty string", "S802"),
    ("character limit", None),  # name, description or compatibility: see below
    ("must be lowercase", "S803"),
    ("cannot start or end with a hyphen", "S803"),
    ("consecutive hyphens", "S803"),
    ("contains invalid characters", "S803"),
    ("must match skill name", "S804"),
    ("Field 'compatibility' must be a string", "S806"),
    ("Unexpected fields in frontmatter", "S809"),
]


def ref_codes(skill_dir: Path) -> set:
    p = subprocess.run([SKILLS_REF, "validate", str(skill_dir)], capture_output=True, text=True)
    codes = set()
    for line in p.stderr.splitlines():
        line = line.strip()
        if not line.startswith("- "):
            continue
        msg = line[2:]
        if "character limit" in msg:
            codes.add({"Skill name": "S803", "Description": "S805", "Compatibility": "S806"}[
                next(k for k in ("Skill name", "Description", "Compatibility") if msg.startswith(k))
            ])
            continue
        hit = [c for m, c in MESSAGES if c and m in msg]
        if not hit:
            raise SystemExit(f"unmapped skills-ref message for {skill_dir}: {msg}")
        codes.add(hit[0])
    if p.returncode == 0 and codes:
        raise SystemExit(f"skills-ref passed {skill_dir} yet printed errors")
    return codes


def kiwi_codes(skill_md: Path) -> set:
    p = subprocess.run([KIWI, "check", "--format", "json", str(skill_md)], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"kiwi check failed on {skill_md} ({p.returncode}): {p.stderr}")
    out = json.loads(p.stdout)
    codes = set()
    for d in out["diagnostics"]:
        if d["severity"] == "error" or d["code"] == "S809":
            codes.add(d["code"])
    return codes


# Made-up skills: (folder, SKILL.md text). Each breaks one rule, or sits right on a limit.
def cases():
    ok = "description: Does things. Use when asked.\n"
    yield "good", "---\nname: good\n" + ok + "---\nBody\n"
    yield "Upper", "---\nname: Upper\n" + ok + "---\n"
    yield "-lead", "---\nname: -lead\n" + ok + "---\n"
    yield "trail-", "---\nname: trail-\n" + ok + "---\n"
    yield "two--hy", "---\nname: two--hy\n" + ok + "---\n"
    yield "under_score", "---\nname: under_score\n" + ok + "---\n"
    yield "dot.ted", "---\nname: dot.ted\n" + ok + "---\n"
    yield "a" * 64, "---\nname: " + "a" * 64 + "\n" + ok + "---\n"
    yield "a" * 65, "---\nname: " + "a" * 65 + "\n" + ok + "---\n"
    yield "café", "---\nname: café\n" + ok + "---\n"
    yield "n123", "---\nname: n123\n" + ok + "---\n"
    yield "folder", "---\nname: other\n" + ok + "---\n"
    yield "noname", "---\n" + ok + "---\n"
    yield "nodesc", "---\nname: nodesc\n---\n"
    yield "emptydesc", "---\nname: emptydesc\ndescription: \"\"\n---\n"
    yield "blankname", "---\nname: \"  \"\n" + ok + "---\n"
    yield "desc1024", "---\nname: desc1024\ndescription: " + "d" * 1024 + "\n---\n"
    yield "desc1025", "---\nname: desc1025\ndescription: " + "d" * 1025 + "\n---\n"
    yield "descutf", "---\nname: descutf\ndescription: " + "é" * 1024 + "\n---\n"
    yield "descblock", "---\nname: descblock\ndescription: |\n  " + "d" * 1030 + "\n---\n"
    yield "compat500", "---\nname: compat500\n" + ok + "compatibility: " + "c" * 500 + "\n---\n"
    yield "compat501", "---\nname: compat501\n" + ok + "compatibility: " + "c" * 501 + "\n---\n"
    yield "compatlist", "---\nname: compatlist\n" + ok + "compatibility:\n  - a\n  - b\n---\n"
    yield "nofront", "# Just markdown\n"
    yield "unclosed", "---\nname: unclosed\n" + ok
    yield "listfront", "---\n- a\n- b\n---\n"
    yield "extra", "---\nname: extra\n" + ok + "flavour: x\n---\n"
    yield "optional", "---\nname: optional\n" + ok + "license: MIT\nmetadata:\n  author: me\n  version: \"1.0\"\nallowed-tools: Bash(git:*) Read\n---\n"
    yield "descnum", "---\nname: descnum\ndescription: 42\n---\n"
    yield "namelist", "---\nname:\n  - a\n" + ok + "---\n"
    yield "dupkey", "---\nname: dupkey\n" + ok + "name: dupkey\n---\n"
    yield "dupnested", "---\nname: dupnested\n" + ok + "metadata:\n  a: x\n  a: y\n---\n"
    yield "bom", "\ufeff---\nname: bom\n" + ok + "---\n"


# Where skills-ref's YAML reader, strictyaml, refuses YAML that the specification ("YAML
# frontmatter") and the clients' readers (Claude Code's, VS Code's) accept: flow style. kiwi
# follows the clients; the difference is asserted, so that it cannot grow unnoticed.
KNOWN_DIFFERENCES = {
    "flowmap": ("---\nname: flowmap\ndescription: d\nmetadata: {a: b}\n---\n", {"S801"}, set()),
    "flowlist": ("---\nname: flowlist\ndescription: d\nallowed-tools: [Read, Grep]\n---\n", {"S801"}, set()),
}


def main():
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared/corpus/skills"
    if not corpus.is_dir():
        print(f"no corpus at {corpus}: skipped")
        print("0 passed, 0 failed")
        return
    passed, failed = 0, 0
    rows = []
    for skill_md in sorted(corpus.rglob("SKILL.md")):
        rows.append(("corpus", skill_md.relative_to(corpus), skill_md))
    with tempfile.TemporaryDirectory() as tmp:
        for folder, text in cases():
            d = Path(tmp) / folder
            d.mkdir()
            (d / "SKILL.md").write_text(text)
            rows.append(("made-up", folder[:40], d / "SKILL.md"))
        for folder, (text, want_ref, want_kiwi) in KNOWN_DIFFERENCES.items():
            d = Path(tmp) / folder
            d.mkdir()
            (d / "SKILL.md").write_text(text)
            ref, kiwi = ref_codes(d), kiwi_codes(d / "SKILL.md")
            if (ref, kiwi) == (want_ref, want_kiwi):
                passed += 1
                print(f"known difference {folder}: skills-ref {sorted(ref)}, kiwi {sorted(kiwi)} (strictyaml refuses flow style)")
            else:
                failed += 1
                print(f"CHANGED known difference {folder}: skills-ref {sorted(ref)}, kiwi {sorted(kiwi)}")
        counts = {"corpus": [0, 0, 0], "made-up": [0, 0, 0]}  # skills, agree, rejected by skills-ref
        for kind, name, skill_md in rows:
            ref = ref_codes(skill_md.parent)
            # S809 (a hint) is compared only where skills-ref reports the unexpected field.
            kiwi = kiwi_codes(skill_md)
            if "S809" not in ref:
                kiwi.discard("S809")
            c = counts[kind]
            c[0] += 1
            c[2] += bool(ref - {"S809"})
            if ref == kiwi:
                c[1] += 1
                passed += 1
            else:
                failed += 1
                print(f"DISAGREE {kind} {name}: skills-ref {sorted(ref)}, kiwi {sorted(kiwi)}")
    for kind, (n, agree, rejected) in counts.items():
        print(f"{kind}: {agree}/{n} skills with the same verdict and codes ({rejected} rejected by skills-ref)")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
