"""guarded.py, the critical section started in every lock cycle: its JSON lines read back as what was
written, and it starts without the slow imports it avoids. No servers, no binary."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import guarded  # noqa: E402


class ToJson(unittest.TestCase):
    def test_records_read_back_as_written(self):
        records = [
            {"w": 3, "n": 17, "ev": "enter", "t": 123456789012345, "fence": 42, "token": "0f" * 20},
            {"ev": "write", "plain_answer": "OK", "fenced_answer": "STALE fence 5 is older than 7"},
            {"ev": "done", "report": {"fence": None, "released": True, "stopping": False, "list": [1, 2.5, "x"]}},
            {"s": 'quote " backslash \\ newline \n tab \t nul \x00 del \x7f é ☃'},
            {},
        ]
        for rec in records:
            with self.subTest(rec=rec):
                self.assertEqual(json.loads(guarded.to_json(rec)), rec)

    def test_what_has_no_json_is_refused(self):
        with self.assertRaises(TypeError):
            guarded.to_json({"x": object()})


class StartUp(unittest.TestCase):
    def test_no_module_that_imports_re_or_enum_is_loaded(self):
        # The way redlock starts it (python3 -S guarded.py), minus main().
        code = "import sys; sys.path.insert(0, %r); import guarded; print(' '.join(sorted(sys.modules)))" % HERE
        out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        loaded = set(out.stdout.split())
        self.assertIn("guarded", loaded)
        self.assertFalse(loaded & {"json", "socket", "signal", "re", "enum"}, sorted(loaded))


if __name__ == "__main__":
    unittest.main()
