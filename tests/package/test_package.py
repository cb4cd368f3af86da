"""The Debian package, built with cpack from the build tree (REDLOCK_BUILD_DIR) into a temporary
directory: its dependencies are computed, it holds the binary, the man page, the completions and
the docs, and the binary it holds runs and shows the package's version."""

import glob
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

EXPECTED_FILES = [
    "./usr/bin/redlock",
    "./usr/share/man/man1/redlock.1.gz",
    "./usr/share/bash-completion/completions/redlock",
    "./usr/share/zsh/vendor-completions/_redlock",
    "./usr/share/doc/redlock/README.md",
    "./usr/share/doc/redlock/LICENSE",
]


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, check=True, **kw)


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        build = os.environ.get("REDLOCK_BUILD_DIR") or os.path.join(ROOT, "build")
        config = os.path.join(build, "CPackConfig.cmake")
        if not os.path.exists(config):
            raise RuntimeError("no CPackConfig.cmake in %s (set REDLOCK_BUILD_DIR)" % build)
        for tool, package in (("cpack", "cmake"), ("dpkg-shlibdeps", "dpkg-dev"), ("file", "file")):
            if not shutil.which(tool):
                # Without it, cpack makes a package whose Depends is empty: say why instead.
                raise RuntimeError("%s not found: install the Debian package %s" % (tool, package))
        cls.workdir = tempfile.mkdtemp(prefix="redlock-deb-")
        try:
            made = subprocess.run(["cpack", "-G", "DEB", "--config", config, "-B", cls.workdir],
                                  capture_output=True, text=True, timeout=300)
            if made.returncode != 0:
                raise RuntimeError("cpack failed:\n%s\n%s" % (made.stdout, made.stderr))
            cls.cpack_output = made.stdout + made.stderr
            debs = glob.glob(os.path.join(cls.workdir, "redlock_*.deb"))
            if len(debs) != 1:
                raise RuntimeError("cpack made %r" % debs)
            cls.deb = debs[0]
        except Exception:
            shutil.rmtree(cls.workdir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def field(self, name):
        return run(["dpkg-deb", "-f", self.deb, name]).stdout.strip()

    def extracted(self):
        root = os.path.join(self.workdir, "root")
        if not os.path.isdir(root):
            run(["dpkg-deb", "-x", self.deb, root])
        return root

    def test_depends_is_computed_from_the_linked_libraries(self):
        depends = {alt.split()[0].split(":")[0] for dep in self.field("Depends").split(",") for alt in dep.split("|")}
        self.assertIn("libssl3", depends)
        self.assertIn("libc6", depends)
        # Every shared library the binary needs comes from a package that Depends names. (hiredis is
        # among them only when it is linked as a shared library, not from libhiredis.a.)
        binary = os.path.join(self.extracted(), "usr", "bin", "redlock")
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "-d", binary]).stdout)
        # libssl is loaded with dlopen() for rediss:// only: Depends names it, the binary does not.
        self.assertNotIn("libssl.so.3", needed)
        # Nothing but the C library is loaded at start (libstdc++ is linked in, libm is not needed).
        self.assertEqual([n for n in needed if not n.startswith("ld-linux")], ["libc.so.6"])
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        for soname in needed:
            owners = set()
            for line in run(["dpkg", "-S", soname]).stdout.splitlines():
                package, path = line.split(": ", 1)
                if path.endswith("/" + soname) and package.endswith(":" + arch):
                    owners.add(package.rsplit(":", 1)[0])
            self.assertTrue(owners & depends, "%s (from %s) is not in Depends %s" % (soname, owners, depends))
            if soname.startswith("libhiredis"):
                self.assertTrue(any(d.startswith("libhiredis") for d in depends))

    def test_control_fields(self):
        self.assertEqual(self.field("Package"), "redlock")
        self.assertEqual(self.field("Section"), "utils")
        self.assertTrue(self.field("Maintainer"))
        self.assertIn("Redis", self.field("Description"))
        self.assertRegex(os.path.basename(self.deb), r"^redlock_%s_[a-z0-9]+\.deb$" % re.escape(self.field("Version")))

    def test_it_holds_the_binary_man_page_completions_and_docs(self):
        listing = run(["dpkg-deb", "-c", self.deb]).stdout
        paths = [line.split()[-1] for line in listing.splitlines() if line.strip()]
        for path in EXPECTED_FILES:
            self.assertIn(path, paths)

    def test_the_extracted_binary_runs_and_shows_the_package_version(self):
        root = self.extracted()
        binary = os.path.join(root, "usr", "bin", "redlock")
        version = run([binary, "--version"]).stdout.strip()
        self.assertEqual(version, "redlock " + self.field("Version"))
        # The completion it prints is the one installed beside it.
        printed = run([binary, "completion", "bash"]).stdout
        with open(os.path.join(root, "usr/share/bash-completion/completions/redlock")) as f:
            self.assertEqual(printed, f.read())
        # The man page it ships is the one in the source tree.
        with gzip.open(os.path.join(root, "usr/share/man/man1/redlock.1.gz"), "rt") as shipped, \
                open(os.path.join(ROOT, "man", "redlock.1")) as source:
            self.assertEqual(shipped.read(), source.read())



class CmakeInstall(unittest.TestCase):
    """`cmake --install`: each file where its tools look for it, under either prefix."""

    def test_the_zsh_completion_goes_where_zsh_looks_under_each_prefix(self):
        build = os.environ.get("REDLOCK_BUILD_DIR") or os.path.join(ROOT, "build")
        for prefix, zsh_dir in (("/usr/local", "site-functions"), ("/usr", "vendor-completions")):
            with self.subTest(prefix=prefix):
                dest = tempfile.mkdtemp(prefix="redlock-install-")
                try:
                    run(["cmake", "--install", build, "--prefix", prefix], env=dict(os.environ, DESTDIR=dest))
                    base = dest + prefix
                    self.assertTrue(os.path.exists(os.path.join(base, "share/zsh", zsh_dir, "_redlock")))
                    self.assertEqual(glob.glob(os.path.join(base, "share/zsh/*/_redlock")),
                                     [os.path.join(base, "share/zsh", zsh_dir, "_redlock")])
                    self.assertTrue(os.path.exists(os.path.join(base, "share/bash-completion/completions/redlock")))
                    self.assertTrue(os.access(os.path.join(base, "bin/redlock"), os.X_OK))
                finally:
                    shutil.rmtree(dest, ignore_errors=True)

if __name__ == "__main__":
    unittest.main(verbosity=2)
