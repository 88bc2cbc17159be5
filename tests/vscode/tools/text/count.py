"""Count the words of a file (for the ▶ Run tests: a required parameter without a default,
declared before the optional ones, which sort before it alphabetically)."""

__version__ = "1.0.0"
__tool_type__ = "python"
__executor_id__ = "rt/py_rt"
__category__ = "text"
__tool_description__ = "Count the words of a file"

import json
import pathlib
import sys

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file to count"},
        "top": {"type": "integer", "default": 3, "description": "How many words to list"},
        "min_length": {"type": "integer", "default": 1, "description": "Shorter words are skipped"},
    },
    "required": ["path"],
}

if __name__ == "__main__":
    params = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    pathlib.Path("count.ran").write_text(json.dumps(params))
    words = pathlib.Path(params["path"]).read_text().split()
    print(len(words), flush=True)
