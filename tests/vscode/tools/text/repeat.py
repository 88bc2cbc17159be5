"""Repeat a word (for the ▶ Run… test: typed parameters with defaults)."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/py_rt"
__category__ = "text"
__tool_description__ = "Repeat a word, optionally shouted"

import json
import pathlib
import sys

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "word": {"type": "string", "default": "kiwi", "description": "The word"},
        "times": {"type": "integer", "default": 2, "description": "How often"},
        "shout": {"type": "boolean", "description": "Upper case"},
    },
    "required": ["word"],
}

if __name__ == "__main__":
    params = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    pathlib.Path("repeat.ran").write_text(json.dumps(params))
    word = params.get("word", "kiwi")
    if params.get("shout"):
        word = word.upper()
    print(" ".join([word] * int(params.get("times", 1))), flush=True)
