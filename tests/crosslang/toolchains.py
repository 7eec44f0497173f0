"""What the cross-language checks (compare.py, ringfile.py) share: their
toolchain arguments, running one step of a check, and building the Go and
Rust programs and the Lua environment against the build's libchring."""
import os
import subprocess
import sys
import time


def add_arguments(ap):
    """The arguments both checks take (meson.build passes them)."""
    ap.add_argument("--work", required=True, help="scratch directory (in the build dir)")
    ap.add_argument("--go", required=True)
    ap.add_argument("--go-src", required=True)
    ap.add_argument("--cargo", required=True)
    ap.add_argument("--rust-manifest", required=True)
    ap.add_argument("--luajit", required=True)
    ap.add_argument("--lua-script", required=True)
    ap.add_argument("--lua-lib", required=True, help="directory holding chring.lua")


def timed_run(label, cmd, env=None, cwd=None):
    """Runs one step; on failure prints its output and ends the check with
    status 1. Returns (stdout, seconds)."""
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        print(f"{label}: `{' '.join(cmd)}` failed with status {proc.returncode}:\n"
              f"{proc.stdout.decode(errors='replace')}{proc.stderr.decode(errors='replace')}")
        sys.exit(1)
    return proc.stdout.decode(errors="replace"), seconds


def run(label, cmd, env=None, cwd=None):
    """As timed_run, returning only the step's stdout."""
    return timed_run(label, cmd, env=env, cwd=cwd)[0]


class Programs:
    """The Go and Rust programs, built once, and the environment the Lua
    scripts run in (CHRING_LIB, LUA_PATH)."""

    def __init__(self, args):
        self.env = dict(os.environ)
        # The -L directory: the libdir variable of Meson's uninstalled .pc names no real directory.
        libs = run("pkg-config", ["pkg-config", "--libs-only-L", "chring"], env=self.env).split()
        libdir = next(f[2:] for f in libs if os.path.exists(os.path.join(f[2:], "libchring.so")))
        self.go = os.path.join(args.work, "route-go")
        run("go build", [args.go, "build", "-o", self.go, "."], env=self.env, cwd=args.go_src)
        run("cargo build", [args.cargo, "build", "--offline", "--release", "--manifest-path",
                            args.rust_manifest], env=self.env)
        target = self.env.get("CARGO_TARGET_DIR", os.path.join(args.work, "target"))
        self.rust = os.path.join(target, "release", "chring-crosslang")
        self.lua_env = dict(self.env, CHRING_LIB=os.path.join(libdir, "libchring.so"),
                            LUA_PATH=os.path.join(args.lua_lib, "?.lua") + ";;")

    def commands(self, args, c_program, mode):
        """The command (and environment) of each language's side of a check
        that has a mode of the Go and Rust programs: C's own program, then
        `route-go MODE`, `chring-crosslang MODE`, `luajit LUA_SCRIPT`."""
        return {
            "c": ([c_program], self.env),
            "go": ([self.go, mode], self.env),
            "rust": ([self.rust, mode], self.env),
            "lua": ([args.luajit, args.lua_script], self.lua_env),
        }
