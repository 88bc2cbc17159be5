#!/usr/bin/env python3
"""`kiwi convert` (issue 28, item 7): a directive and a `.prompt.md` become Agent Skills.

A project with a directive whose steps run two tools (a Python tool, and a YAML tool with its
script) and a VS Code prompt file. Checks:
- the directive's skill: SKILL.md with its steps as instructions, each tool's files under
  `scripts/` and referenced from its step; `skills-ref validate` accepts it (no error at
  all: only the specification's keys) and kiwi agrees (tests/skills/agreement.py's mapping);
- the prompt's skill keeps `name` (sanitized), `description`, `argument-hint`, adds
  `disable-model-invocation: true` and the body verbatim, as VS Code's migration does;
  skills-ref's one remark is the clients' keys (unexpected fields: kiwi's S809 hint), and
  kiwi agrees;
- a second convert is refused without --force (nothing changed), replaces with --force;
- nothing is written outside `.agents/skills/` (the project's files are the same before
  and after, but for the new skills).

Usage: KIWI_BIN=target/debug/kiwi SKILLS_REF=target/skills-ref-venv/bin/skills-ref \
       python3 tests/skills/convert.py
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agreement  # noqa: E402

KIWI = agreement.KIWI

DIRECTIVE = """# Count a report

```xml
<directive name="count_report" version="1.3.0">
  <metadata>
    <description>Count the words of a report and format the summary as JSON</description>
    <category>text</category>
    <permissions>
      <execute resource="kiwi" action="run" item_type="tool" id="*"/>
    </permissions>
  </metadata>
  <inputs>
    <input name="path" type="string" required="true">The report to count</input>
  </inputs>
  <process>
    <step name="count">
      <description>Count the words of the report</description>
      <execute item_type="tool" item_id="text/word_count">
        <param name="path" value="{input:path}"/>
      </execute>
    </step>
    <step name="format">
      <description>Format the counts as JSON</description>
      <execute item_type="tool" item_id="data/fmt"/>
    </step>
  </process>
  <outputs>
    <success>The report is counted</success>
  </outputs>
</directive>
```
"""

WORD_COUNT = '''"""Count words."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "runtimes/python_runtime"
__category__ = "text"
__tool_description__ = "Count the words of a file"

import sys


def main():
    print(len(open(sys.argv[1]).read().split()))


if __name__ == "__main__":
    main()
'''

FMT_YAML = """tool_id: fmt
tool_type: python
version: "1.0.0"
executor_id: runtimes/python_runtime
category: data
description: Format counts as JSON
"""

FMT_PY = "import json, sys\nprint(json.dumps({'counts': sys.argv[1:]}))\n"

PROMPT = """---
name: Review PR
description: Review a pull request for correctness and style
argument-hint: '[pr-number]'
agent: agent
model: GPT-5
tools: ['search', 'fetch']
---

Review pull request #${input:pr} and list what must change.
"""


def kiwi(*args, cwd):
    return subprocess.run([KIWI, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def snapshot(root: Path):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".agents" not in p.parts}


def main():
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"ok   {name}")
        else:
            failed += 1
            print(f"FAIL {name}: {detail}")

    with tempfile.TemporaryDirectory() as t:
        proj = Path(t) / "proj"
        ai = proj / ".ai"
        (ai / "directives/text").mkdir(parents=True)
        (ai / "directives/text/count_report.md").write_text(DIRECTIVE)
        (ai / "tools/text").mkdir(parents=True)
        (ai / "tools/text/word_count.py").write_text(WORD_COUNT)
        (ai / "tools/data").mkdir(parents=True)
        (ai / "tools/data/fmt.yaml").write_text(FMT_YAML)
        (ai / "tools/data/fmt.py").write_text(FMT_PY)
        (proj / ".github/prompts").mkdir(parents=True)
        (proj / ".github/prompts/review.prompt.md").write_text(PROMPT)
        os.environ["KIWI_USERSPACE_DIR"] = str(Path(t) / "user")
        os.environ["HOME"] = str(Path(t) / "home")
        before = snapshot(proj)

        r = kiwi("convert", "directive/text/count_report", "--json", cwd=proj)
        check("convert a directive", r.returncode == 0, r.stdout + r.stderr)
        skill = proj / ".agents/skills/count-report"
        if r.returncode == 0:
            out = json.loads(r.stdout)
            check("its files: SKILL.md and each tool's under scripts/",
                  sorted(out["files"]) == ["SKILL.md", "scripts/fmt.py", "scripts/fmt.yaml", "scripts/word_count.py"], out)
            text = (skill / "SKILL.md").read_text()
            check("steps as instructions, each tool referenced from its step",
                  "1. **count**: Count the words of the report\n   - Run [`scripts/word_count.py`](scripts/word_count.py)" in text
                  and "2. **format**: Format the counts as JSON\n   - Run [`scripts/fmt.py`](scripts/fmt.py)" in text
                  and "- `path` (required): The report to count" in text, text)
            check("the tool's bytes as they are", (skill / "scripts/word_count.py").read_text() == WORD_COUNT)
            ref, kw = agreement.ref_codes(skill), agreement.kiwi_codes(skill / "SKILL.md")
            check("skills-ref validate accepts the directive's skill, kiwi agrees", ref == set() and kw == set(), (ref, kw))

        r = kiwi("convert", str(proj / ".github/prompts/review.prompt.md"), cwd=proj)
        check("convert a .prompt.md", r.returncode == 0, r.stdout + r.stderr)
        pskill = proj / ".agents/skills/review-pr"
        if r.returncode == 0:
            text = (pskill / "SKILL.md").read_text()
            want = ('---\nname: "review-pr"\ndescription: "Review a pull request for correctness and style"\n'
                    'disable-model-invocation: true\nargument-hint: "[pr-number]"\n---\n'
                    "Review pull request #${input:pr} and list what must change.\n")
            check("name, description, argument-hint kept as VS Code's migration does", text == want, text)
            check("the keys a skill cannot keep are reported", "not kept: agent" in r.stdout and "not kept: tools" in r.stdout, r.stdout)
            ref, kw = agreement.ref_codes(pskill), agreement.kiwi_codes(pskill / "SKILL.md")
            # skills-ref: "Unexpected fields" (the clients' keys) and nothing else; kiwi knows
            # those keys (no hint) and reports nothing either.
            check("skills-ref's one remark is the clients' keys (S809), kiwi reports nothing else", ref == {"S809"} and kw == set(), (ref, kw))

        # Never overwritten without --force; replaced with it.
        (skill / "SKILL.md").write_text("edited by hand\n")
        r = kiwi("convert", "directive/text/count_report", cwd=proj)
        check("a second convert is refused without --force", r.returncode != 0 and "--force" in r.stderr
              and (skill / "SKILL.md").read_text() == "edited by hand\n", r.stderr)
        r = kiwi("convert", "directive/text/count_report", "--force", cwd=proj)
        check("--force replaces it", r.returncode == 0 and (skill / "SKILL.md").read_text().startswith("---\nname: \"count-report\""), r.stderr)
        leftovers = [p.name for p in (proj / ".agents/skills").iterdir() if p.name.startswith(".kiwi-convert")]
        check("no staging folder left behind", leftovers == [], leftovers)
        check("nothing written outside .agents/skills/", snapshot(proj) == before)
        r = kiwi("convert", "tool/text/word_count", cwd=proj)
        check("a tool is not converted", r.returncode != 0 and "not a directive" in r.stderr, r.stderr)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
