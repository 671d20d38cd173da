"""The README's Python example runs as printed (a reader copies it)."""

import os
import re
import subprocess
import sys

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_the_readme_python_example_runs():
    text = open(README).read()
    section = text[text.index("### The same from Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert re.search(r"\[array\(\[[0-9.e+-]+\], dtype=float32\)\]", out.stdout), out.stdout
