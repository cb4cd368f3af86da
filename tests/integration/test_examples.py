"""The man page's examples of reading the JSON with jq, run as written (in bash, with redlock on
PATH) against real servers: what they print must be true, and what they take must be given back."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import ROOT, ClusterTest, clean_env, main, redlock, redlock_binary

MAN_PAGE = os.path.join(ROOT, "man", "redlock.1")


def jq_examples():
    """The lines of the example block after "Read the JSON with", as a shell reads them."""
    with open(MAN_PAGE, encoding="utf-8") as f:
        text = f.read()
    start = text.index("Read the JSON with")
    block = text[text.index(".EX\n", start) + 4:text.index(".EE\n", start)]
    block = block.replace("\\-", "-").replace("\\(aq", "'").replace("\\e", "\\")
    return block.splitlines()


def example_groups():
    """The status line, the acquire lines, and the doctor lines (a command and its continuation)."""
    lines = jq_examples()
    status = [line for line in lines if line.startswith("redlock --json status")]
    doctor_at = next(i for i, line in enumerate(lines) if line.startswith("redlock --json doctor"))
    acquire = [line for line in lines[:doctor_at] if line not in status]
    return "\n".join(status), "\n".join(acquire), "\n".join(lines[doctor_at:])


@unittest.skipUnless(shutil.which("jq") and shutil.which("bash"), "needs jq and bash")
class JqExamples(ClusterTest):
    N = 3

    def setUp(self):
        super().setUp()
        self.bin = tempfile.mkdtemp(prefix="redlock-bin-")
        self.addCleanup(shutil.rmtree, self.bin, ignore_errors=True)
        os.symlink(redlock_binary(), os.path.join(self.bin, "redlock"))

    def bash(self, script):
        env = clean_env({"REDLOCK_SERVERS": self.cluster.spec})
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30)

    def test_the_status_line_says_held_for_any_holder(self):
        status, _, _ = example_groups()
        status = status.replace("deploy", "job")
        self.assertEqual(self.bash(status).stdout, "free\n")
        r = self.rl("acquire", "--owner", "alice", "job")
        self.assertEqual(r.code, 0, r)
        self.assertEqual(self.bash(status).stdout, "held alice\n")
        self.rl("release", "job", "--force")
        # Held by a client that keeps no owner record (redis-py's Lock, say): held, not free.
        for s in self.cluster.servers:
            with s.client() as c:
                c.call("SET", "job", "theirs", "PX", "60000")
        p = self.bash(status)
        self.assertEqual((p.stdout, p.stderr), ("held\n", ""))

    def test_the_acquire_lines_keep_the_token_and_give_the_lock_back(self):
        _, acquire, _ = example_groups()
        p = self.bash(acquire + '\nprintf "%s\\n" "$fence" "$(redlock --json status job | jq -r .state)"')
        self.assertEqual(p.returncode, 0, p)
        fence, state = p.stdout.splitlines()
        self.assertRegex(fence, r"^[1-9][0-9]*$")
        self.assertEqual(state, "held")
        # The example's own clean-up released it: nothing is left to expire.
        self.assertEqual(self.cluster.values("job"), [None] * 3)
        # Busy: it stops there, with the status of acquire.
        held = self.rl("acquire", "job")
        p = self.bash(acquire + '\necho "after: $fence"')
        self.assertEqual((p.returncode, p.stdout), (75, ""), p)
        self.assertEqual(self.cluster.values("job"), [held.out.strip()] * 3)

    def test_the_doctor_lines_name_each_check_not_fine(self):
        _, _, doctor = example_groups()
        p = self.bash(doctor)
        self.assertEqual((p.returncode, p.stderr), (0, ""), p)
        checks = [c["check"] for c in redlock(["--json", "doctor"], servers=self.cluster).json()["checks"]]
        lines = p.stdout.splitlines()
        for line in lines:
            self.assertRegex(line, r"^(%s): \S" % "|".join(checks))
        # The test servers keep nothing on disk: that check is never fine here.
        self.assertTrue(any(line.startswith("persistence: ") for line in lines), lines)


if __name__ == "__main__":
    main()
