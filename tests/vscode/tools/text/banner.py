"""Print a word in a banner (for the per-parameter ▶ Run… tests: a required string, an enum
with a default, an integer with a minimum and a maximum)."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/py_rt"
__category__ = "text"
__tool_description__ = "Print a word in a banner"

import json
import sys

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "What the banner says"},
        "style": {"enum": ["plain", "box", "stars"], "default": "plain", "description": "The frame"},
        "width": {"type": "integer", "minimum": 1, "maximum": 40, "default": 10, "description": "Columns"},
    },
    "required": ["text"],
}

if __name__ == "__main__":
    params = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    edge = {"plain": "", "box": "#", "stars": "*"}[params.get("style", "plain")]
    print(edge * int(params.get("width", 10)), flush=True)
    print("banner: " + params["text"], flush=True)
    print(edge * int(params.get("width", 10)), flush=True)
