#!/usr/bin/env python3
"""Side-by-side timings of session-doctor on corpora made by benches/gen_corpus.py (python3 stdlib only).

Usage: python3 benches/compare.py BIN CORPUS_DIR [CORPUS_DIR...] [--runs 5] [--timeout 900]
                                  [--mem-limit 12G] [--json-out FILE] [--no-peers]

Per corpus (its corpus.json says the mode):
  many           BIN check --format json --fail-on never CORPUS   vs   ccusage 20.0.24 `session --offline --json`
                 (CLAUDE_CONFIG_DIR=CORPUS/claude, CODEX_HOME=CORPUS/codex, scratch HOME)   vs   `wc -l` over the
                 same files (the floor).
  huge-*, opencode-many
                 BIN list / check / inspect --session ID --top 20 / repair --out / compact --session ID --out, the
                 ccusage peer (`claude|codex|opencode session --offline --json`) and `wc -l` over the store.
Commands alternate (A B C A B C ...), one untimed warm-up each first (page cache warm), median of --runs.
Wall (monotonic clock around the child), CPU (user+sys) and peak RSS (ru_maxrss) of each child come from
os.wait4's resource usage. Targets are printed beside the figures; nothing is asserted. Exit 0, or 1 when
a command crashed (killed by a signal, Rust panic exit 101); a timeout or an unexpected exit code is reported
in the table but is not a crash. With two corpora of the same mode (e.g. 100M and 1G) a growth table follows.

BIN is copied to a private temp dir first, so a rebuild during the run cannot change it.
ccusage: $CCUSAGE_BIN, else `bash scripts/install_clients.sh` in the repo; its native binary is run
directly (not the node launcher) when it can be found beside it.
"""
import argparse, hashlib, json, os, resource, shutil, signal, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1024 * 1024

TARGETS = {
    "many_ratio": 0.8,          # check wall <= 0.8 x ccusage wall
    "many_gbps": 1.0,           # aim
    "many_rss": 96,             # MiB
    "huge_rss": 256,            # MiB, each command
    "huge_gbps": 0.5,           # check
    "growth": 1.05,             # 10x bytes costs <= 10.5x time
}


def parse_size(s):
    s = s.strip().upper().rstrip("B")
    binary = s.endswith("I")
    s = s.rstrip("I")
    mult = {"K": 1, "M": 2, "G": 3, "T": 4}.get(s[-1:], 0)
    n = float(s[:-1] if mult else s)
    return int(n * ((1024 if binary else 1000) ** mult))


def log(*a):
    print("compare:", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- running

class Result:
    __slots__ = ("wall", "cpu", "rss", "rc", "sig", "timeout", "stderr")

    def __init__(self, wall, cpu, rss, rc, sig, timeout, stderr):
        self.wall, self.cpu, self.rss, self.rc, self.sig, self.timeout, self.stderr = wall, cpu, rss, rc, sig, timeout, stderr


SPAWN = None   # path of the compiled benches/spawn.c, when cc is there


def build_spawn(scratch):
    src = os.path.join(HERE, "spawn.c")
    exe = os.path.join(scratch, "spawn")
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if not cc or not shutil.which(cc):
            continue
        r = subprocess.run([cc, "-O2", "-o", exe, src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode == 0:
            return exe
    return None


def run_child(argv, env, stdout_path, timeout, mem_limit):
    """Run argv; wall, CPU (user+sys) and peak RSS of the child from wait4.

    Through benches/spawn.c when it compiled (a child forked from Python inherits Python's RSS
    high-water mark, so direct measurement here has a floor of this process's RSS)."""
    errf = tempfile.TemporaryFile()
    if SPAWN:
        resf = stdout_path + ".res"
        with open(stdout_path, "wb") as out:
            p = subprocess.run([SPAWN, resf, str(timeout), str(mem_limit or 0)] + argv, stdout=out, stderr=errf,
                               stdin=subprocess.DEVNULL, env=env)
        errf.seek(0)
        err = errf.read()[-4000:].decode("utf-8", "replace")
        errf.close()
        if p.returncode != 0 or not os.path.exists(resf):
            raise SystemExit(f"compare: spawn helper failed ({p.returncode}): {err}")
        wall, cpu, rss, rc, sig, to = open(resf).read().split()
        os.unlink(resf)
        rc, sig = int(rc), int(sig)
        return Result(float(wall), float(cpu), int(rss) * 1024, None if rc < 0 else rc, sig or None, to == "1", err)

    def pre():
        os.setsid()
        if mem_limit:
            resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=errf, stdin=subprocess.DEVNULL, env=env, preexec_fn=pre)
        box = {}

        def waiter():
            _, status, ru = os.wait4(p.pid, 0)
            box["t"] = time.perf_counter()
            box["status"], box["ru"] = status, ru
        th = threading.Thread(target=waiter, daemon=True)
        th.start()
        th.join(timeout)
        timed_out = th.is_alive()
        if timed_out:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            th.join()
    p.returncode = 0   # reaped by wait4 above; keep Popen from waiting again
    status, ru = box["status"], box["ru"]
    wall = box["t"] - t0
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    errf.seek(0)
    err = errf.read()[-4000:].decode("utf-8", "replace")
    errf.close()
    return Result(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, rc, sig, timed_out, err)


class Cmd:
    def __init__(self, label, argv, env, ok_rcs=(0,), out_dir=None, kind="sd", parse=None):
        self.label, self.argv, self.env, self.ok_rcs, self.out_dir, self.kind, self.parse = label, argv, env, ok_rcs, out_dir, kind, parse
        self.results, self.info, self.warm = [], "", None

    def status(self):
        rs = ([self.warm] if self.warm else []) + self.results
        for r in rs:
            if r.timeout:
                return f"TIMEOUT (killed after {r.wall:.0f} s)"
            if r.sig is not None and ("memory allocation of" in r.stderr or "out of memory" in r.stderr.lower()):
                return "OUT OF MEMORY (at the address-space limit)"
            if r.sig is not None:
                name = signal.Signals(r.sig).name if r.sig in signal.Signals._value2member_map_ else str(r.sig)
                return f"CRASH ({name})"
            if r.rc == 101:
                return "CRASH (panic, exit 101)"
        bad = sorted({r.rc for r in rs if r.rc not in self.ok_rcs})
        if bad:
            return "exit " + ",".join(map(str, bad))
        return "ok (exit " + ",".join(map(str, sorted({r.rc for r in rs}))) + ")"

    def crashed(self):
        return self.status().startswith("CRASH")


def clean(d):
    if d and os.path.exists(d):
        shutil.rmtree(d, ignore_errors=True)


def prewarm(files):
    """Read the corpus once so that the first warm-up also starts with the page cache warm."""
    buf = bytearray(1 << 20)
    for p in files:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass


def bench(cmds, runs, timeout, mem_limit, scratch, budget):
    outp = os.path.join(scratch, "stdout")
    for c in cmds:   # warm-up, untimed; its output is kept for the checks
        clean(c.out_dir)
        wp = os.path.join(scratch, f"warm-{len(c.label)}-{abs(hash(c.label))}.out")
        log(f"warm-up: {c.label}")
        c.warm = run_child(c.argv, c.env, wp, timeout, mem_limit)
        if c.parse and not c.warm.timeout and c.warm.sig is None and c.warm.rc in c.ok_rcs:
            try:
                c.info = c.parse(wp)
            except Exception as e:   # noqa: BLE001 - report, never fail
                c.info = f"(output not parsed: {type(e).__name__})"
        os.unlink(wp)
        clean(c.out_dir)
    for c in cmds:   # a slow command gets fewer timed runs (about `budget` seconds in all); none: the warm-up counts
        w = c.warm
        failed = w.timeout or w.sig is not None or w.rc not in c.ok_rcs   # not run again; its warm-up is shown
        c.nruns = 0 if failed else min(runs, int(budget // max(w.wall, 1e-3)))
        if failed:
            log(f"  {c.label}: warm-up failed ({c.status()}): not run again")
        elif c.nruns < runs:
            log(f"  {c.label}: warm-up took {w.wall:.1f} s: {c.nruns} timed run(s) (budget {budget:.0f} s)"
                + ("; the warm-up is the measurement" if c.nruns == 0 else ""))
        if c.nruns == 0 and not failed:
            c.results.append(w)
    for r in range(runs):
        for c in cmds:
            if r >= c.nruns:
                continue
            res = run_child(c.argv, c.env, outp, timeout, mem_limit)
            c.results.append(res)
            clean(c.out_dir)
        done = [c for c in cmds if len(c.results) == r + 1]
        if done:
            log(f"run {r + 1}/{runs} done: " + ", ".join(f"{c.label.split()[0] if c.kind != 'sd' else c.label.split()[1]} {c.results[-1].wall:.2f}s"
                                                          for c in done))
    os.path.exists(outp) and os.unlink(outp)


# --------------------------------------------------------------------------------------------- corpus

def jsonl_files(d):
    out = []
    for dp, dns, fns in os.walk(d):
        dns.sort()
        out += [os.path.join(dp, f) for f in sorted(fns) if f.endswith(".jsonl")]
    return out


def parse_sd(path):
    with open(path, "rb") as f:
        d = json.load(f)
    bits = []
    if isinstance(d.get("sessions"), list):
        bits.append(f"{len(d['sessions'])} sessions")
        nf = sum(len(s.get("findings", [])) for s in d["sessions"] if isinstance(s.get("findings"), list))
        if nf:
            bits.append(f"{nf} findings")
    if isinstance(d.get("copies"), list):
        bits.append(f"{sum(1 for c in d['copies'] if c.get('written'))} copies written")
    if "written" in d:
        bits.append("written" if d.get("written") else "not written" + (" (unreachable)" if d.get("unreachable") else ""))
    if d.get("errors"):
        bits.append(f"{len(d['errors'])} errors")
    return ", ".join(bits)


def parse_ccusage(path):
    with open(path, "rb") as f:
        d = json.load(f)
    for k in ("session", "sessions", "data"):
        if isinstance(d.get(k), list):
            return f"{len(d[k])} sessions with usage"
    return ""


def find_ccusage():
    b = os.environ.get("CCUSAGE_BIN")
    if not b:
        try:
            out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_clients.sh")], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900).stdout
            for line in out.splitlines():
                if line.startswith("CCUSAGE_BIN="):
                    b = line.split("=", 1)[1].strip().strip("'\"")
        except Exception as e:  # noqa: BLE001
            log(f"ccusage not available: {e}")
    if not b or not os.path.exists(b):
        return None, "ccusage not installed (scripts/install_clients.sh failed)"
    real = os.path.realpath(b)
    nm = os.path.dirname(os.path.dirname(os.path.dirname(real))) if real.endswith(os.path.join("src", "cli.js")) else None
    if nm:
        for plat in ("linux-x64", "linux-arm64", "darwin-arm64", "darwin-x64"):
            nb = os.path.join(nm, "@ccusage", f"ccusage-{plat}", "bin", "ccusage")
            if os.access(nb, os.X_OK):
                return nb, f"ccusage native binary {nb}"
    return b, f"ccusage {b}"


def ccusage_version(b):
    try:
        return subprocess.run([b, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001
        return "?"


def build_cmds(man, corpus, sd, ccusage, scratch, base_env, no_peers):
    mode = man["mode"]
    outdir = lambda n: os.path.join(scratch, "out-" + n)   # noqa: E731
    cmds = []
    files_list = os.path.join(scratch, f"files-{abs(hash(corpus))}.list")
    if mode in ("huge-opencode", "opencode-many"):
        files = [man["db"]]
    else:
        files = jsonl_files(corpus)
    with open(files_list, "wb") as f:
        f.write(b"\0".join(p.encode() for p in files) + b"\0")
    nbytes = sum(os.path.getsize(p) for p in files)
    cc_env = dict(base_env, HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
                  CLAUDE_CONFIG_DIR=man.get("claude_config_dir") or os.path.join(corpus, "claude-none"),
                  CODEX_HOME=man.get("codex_home") or os.path.join(corpus, "codex-none"))
    if mode == "many":
        cmds.append(Cmd("session-doctor check", [sd, "check", "--format", "json", "--fail-on", "never", corpus], base_env, parse=parse_sd))
        if ccusage and not no_peers:
            cmds.append(Cmd("ccusage session", [ccusage, "session", "--offline", "--json"], cc_env, kind="peer", parse=parse_ccusage))
    else:
        if mode == "huge-claude":
            store, peer = os.path.join(corpus, "claude", "projects"), ["claude", "session"]
        elif mode == "huge-codex":
            store, peer = os.path.join(corpus, "codex"), ["codex", "session"]
        else:
            store, peer = man["db"], ["opencode", "session"]
            cc_env["OPENCODE_DATA_DIR"] = man["opencode_data_dir"]
        sid = man.get("session_id")
        j = ["--format", "json"]
        cmds.append(Cmd("session-doctor list", [sd, "list"] + j + [store], base_env, parse=parse_sd))
        cmds.append(Cmd("session-doctor check", [sd, "check"] + j + ["--fail-on", "never", store], base_env, parse=parse_sd))
        if sid:
            cmds.append(Cmd("session-doctor inspect --top 20", [sd, "inspect"] + j + ["--session", sid, "--top", "20", store], base_env, parse=parse_sd))
        cmds.append(Cmd("session-doctor repair", [sd, "repair"] + j + ["--out", outdir("repair"), store], base_env,
                        ok_rcs=(0, 1), out_dir=outdir("repair"), parse=parse_sd))
        if sid:
            cmds.append(Cmd("session-doctor compact", [sd, "compact"] + j + ["--session", sid, "--out", outdir("compact"), store], base_env,
                            ok_rcs=(0, 1), out_dir=outdir("compact"), parse=parse_sd))
        if ccusage and not no_peers:
            cmds.append(Cmd(f"ccusage {' '.join(peer)}", [ccusage] + peer + ["--offline", "--json"], cc_env, kind="peer", parse=parse_ccusage))
    if not no_peers:
        cmds.append(Cmd("wc -l (floor)", ["wc", "-l", f"--files0-from={files_list}"], base_env, kind="floor"))
    prewarm(files)
    return cmds, nbytes, len(files)


# --------------------------------------------------------------------------------------------- report

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_s(x):
    return "—" if x != x else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def summarize(c):
    rs = c.results
    return {"label": c.label, "status": c.status(), "runs": "warm-up only" if getattr(c, "nruns", 1) == 0 and rs else len(rs),
            "wall": med([r.wall for r in rs]), "wall_min": min([r.wall for r in rs], default=float("nan")),
            "wall_max": max([r.wall for r in rs], default=float("nan")), "cpu": med([r.cpu for r in rs]),
            "rss": max([r.rss for r in rs] + ([c.warm.rss] if c.warm else [])) / MIB, "info": c.info,
            "stderr": (c.warm.stderr if c.warm and (c.warm.rc not in c.ok_rcs or c.warm.sig) else "")}


def yes(b):
    return "yes" if b else "**no**"


def report(corpus, man, nbytes, nfiles, cmds, runs):
    mode = man["mode"]
    S = {c.label: summarize(c) for c in cmds}
    lines = []
    gb = nbytes / 1e9
    desc = f"{nbytes / 1e6:,.1f} MB in {nfiles:,} files"
    if man.get("copies") and mode == "many":
        desc += f", {man['copies']} copies"
    if man.get("parts"):
        desc += f", {man.get('sessions', 1):,} session(s), {man.get('messages', 0):,} messages, {man['parts']:,} parts"
    if man.get("lines"):
        desc += f", {man['lines']:,} lines, {man.get('compactions', 0)} compactions"
    lines.append(f"### {mode} {man.get('size', '')} — {desc}")
    lines.append("")
    lines.append(f"`{corpus}`, median of up to {runs} runs (fewer for slow commands: --budget), commands alternating, "
                 f"after one untimed warm-up each (page cache warm); "
                 f"load average before/after: {man.get('_load_before', '?')} / {man.get('_load_after', '?')}.")
    lines.append("")
    lines.append("| command | wall s (median) | min–max | runs | CPU s | peak RSS MiB | GB/s | status | output |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for c in cmds:
        s = S[c.label]
        gbps = gb / s["wall"] if s["wall"] == s["wall"] and s["wall"] > 0 else float("nan")
        if s["wall"] != s["wall"] and c.warm is not None:   # no timed run: show the warm-up's figures
            w = c.warm
            lines.append(f"| {c.label} | {'> ' if w.timeout else '('}{fmt_s(w.wall)}{'' if w.timeout else ')'} | — | 0 | "
                         f"{fmt_s(w.cpu)} | {w.rss / MIB:,.1f} | — | {s['status']} | {s['info']} |")
            continue
        lines.append(f"| {c.label} | {fmt_s(s['wall'])} | {fmt_s(s['wall_min'])}–{fmt_s(s['wall_max'])} | {s['runs']} | {fmt_s(s['cpu'])} | "
                     f"{s['rss']:,.1f} | {'—' if gbps != gbps else f'{gbps:.2f}'} | {s['status']} | {s['info']} |")
    lines.append("")
    # targets
    chk = S.get("session-doctor check")
    peer = next((S[c.label] for c in cmds if c.kind == "peer"), None)
    floor = next((S[c.label] for c in cmds if c.kind == "floor"), None)
    t = []
    if chk and chk["wall"] == chk["wall"]:
        gbps = gb / chk["wall"]
        if mode == "many":
            if peer and peer["wall"] == peer["wall"]:
                r = chk["wall"] / peer["wall"]
                t.append(("check wall / ccusage wall", f"{r:.2f}x", f"<= {TARGETS['many_ratio']}x", yes(r <= TARGETS["many_ratio"])))
                t.append(("check CPU / ccusage CPU", f"{chk['cpu'] / peer['cpu']:.2f}x" if peer["cpu"] else "—", "(info)", ""))
            t.append(("check throughput", f"{gbps:.2f} GB/s", f"aim {TARGETS['many_gbps']} GB/s", yes(gbps >= TARGETS["many_gbps"])))
            t.append(("check peak RSS", f"{chk['rss']:.1f} MiB", f"<= {TARGETS['many_rss']} MiB", yes(chk["rss"] <= TARGETS["many_rss"])))
        else:
            t.append(("check throughput", f"{gbps:.2f} GB/s", f">= {TARGETS['huge_gbps']} GB/s", yes(gbps >= TARGETS["huge_gbps"])))
            if peer and peer["wall"] == peer["wall"]:
                t.append(("check wall / ccusage wall", f"{chk['wall'] / peer['wall']:.2f}x", "(info: SQLite/JSONL peer)", ""))
        if floor and floor["wall"] == floor["wall"] and floor["wall"] > 0:
            t.append(("check wall / wc -l wall", f"{chk['wall'] / floor['wall']:.1f}x", "(floor)", ""))
    if mode != "many":
        for c in cmds:
            if c.kind == "sd":
                s = S[c.label]
                t.append((f"{c.label.replace('session-doctor ', '')} peak RSS", f"{s['rss']:.1f} MiB", f"<= {TARGETS['huge_rss']} MiB",
                          yes(s["rss"] <= TARGETS["huge_rss"] and not s["status"].startswith(("CRASH", "TIMEOUT")))))
    if t:
        lines.append("| target | measured | target | met |")
        lines.append("|---|---:|---|---|")
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in t]
        lines.append("")
    for c in cmds:
        s = S[c.label]
        if not s["status"].startswith("ok"):
            tail = " / ".join(x for x in s["stderr"].strip().splitlines()[-3:])[:400]
            lines.append(f"- **{c.label}: {s['status']}**" + (f": `{tail}`" if tail else ""))
    if any(not S[c.label]["status"].startswith("ok") for c in cmds):
        lines.append("")
    return "\n".join(lines), {"corpus": corpus, "mode": mode, "size": man.get("size"), "bytes": nbytes, "files": nfiles,
                              "manifest": man, "commands": [S[c.label] for c in cmds]}


def growth(results):
    by = {}
    for r in results:
        by.setdefault(r["mode"], []).append(r)
    out = []
    for mode, rs in by.items():
        if len(rs) < 2:
            continue
        rs = sorted(rs, key=lambda r: r["bytes"])
        a, b = rs[0], rs[-1]
        rb = b["bytes"] / a["bytes"]
        out.append(f"### growth: {mode} {a['size']} -> {b['size']} (bytes x{rb:.2f})")
        out.append("")
        out.append("| command | wall small s | wall large s | time ratio | time ratio / bytes ratio | target | met | RSS small -> large MiB |")
        out.append("|---|---:|---:|---:|---:|---|---|---|")
        sa = {c["label"]: c for c in a["commands"]}
        for c in b["commands"]:
            s0 = sa.get(c["label"])
            if not s0 or s0["wall"] != s0["wall"] or c["wall"] != c["wall"]:
                continue
            rt = c["wall"] / s0["wall"]
            norm = rt / rb
            out.append(f"| {c['label']} | {fmt_s(s0['wall'])} | {fmt_s(c['wall'])} | x{rt:.2f} | {norm:.2f} | <= {TARGETS['growth']} | "
                       f"{yes(norm <= TARGETS['growth'])} | {s0['rss']:.0f} -> {c['rss']:.0f} |")
        out.append("")
    return "\n".join(out)


def git_rev(path):
    d = os.path.dirname(os.path.realpath(path))
    try:
        top = subprocess.run(["git", "-C", d, "rev-parse", "--show-toplevel"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=10).stdout.strip()
        if not top:
            return "?"
        rev = subprocess.run(["git", "-C", top, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", top, "status", "--porcelain", "--", "src", "Cargo.toml", "Cargo.lock"],
                               stdout=subprocess.PIPE, text=True, timeout=10).stdout.strip()
        return rev + (" (src/ modified in the work tree)" if dirty else "")
    except Exception:  # noqa: BLE001
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("bin")
    ap.add_argument("corpora", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=900, help="seconds per command run (default 900)")
    ap.add_argument("--budget", type=float, default=60,
                    help="seconds of timed runs per command: a command whose warm-up took W s gets budget/W runs "
                         "(at least 1, at most --runs; default 60)")
    ap.add_argument("--mem-limit", default="12GiB", help="RLIMIT_AS of each child (default 12GiB; 0 = none)")
    ap.add_argument("--json-out", help="also write the figures as JSON here")
    ap.add_argument("--no-peers", action="store_true", help="skip ccusage and wc -l")
    ap.add_argument("--no-header", action="store_true", help="leave out the binary/peer/machine header")
    ap.add_argument("--rev", default=os.environ.get("SD_BENCH_REV"),
                    help="what the binary was built from, for the header (default: $SD_BENCH_REV, else git of BIN's folder)")
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        print(f"compare: binary not found or not executable: {a.bin}", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="sd-compare-")
    try:
        home = os.path.join(scratch, "home")
        for d in ("", "/.config", "/.local/share", "/.cache", "/.local/state"):
            os.makedirs(home + d, exist_ok=True)
        base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "XDG_CONFIG_HOME": home + "/.config",
                    "XDG_DATA_HOME": home + "/.local/share", "XDG_CACHE_HOME": home + "/.cache", "XDG_STATE_HOME": home + "/.local/state",
                    "TZ": "UTC", "LC_ALL": "C", "NO_COLOR": "1"}
        global SPAWN
        SPAWN = build_spawn(scratch)
        sd = os.path.join(scratch, "bin", os.path.basename(a.bin))
        os.makedirs(os.path.dirname(sd))
        shutil.copy2(a.bin, sd)
        sha = hashlib.sha256(open(sd, "rb").read()).hexdigest()[:12]
        ver = subprocess.run([sd, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=base_env).stdout.strip()
        ccusage, ccnote = (None, "peers skipped") if a.no_peers else find_ccusage()
        mem = parse_size(a.mem_limit) if a.mem_limit not in ("0", "") else 0
        if not a.no_header:
            print(f"## session-doctor benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
            print()
            print(f"- binary: `{a.bin}` ({ver or '?'}, sha256 {sha}, git {a.rev or git_rev(a.bin)})")
            print(f"- peer: {ccnote}" + (f" ({ccusage_version(ccusage)})" if ccusage else ""))
            print(f"- machine: {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}; each child limited to "
                  f"{a.mem_limit} of address space, {a.timeout:.0f} s; "
                  + ("wall/CPU/peak RSS from wait4 in benches/spawn.c (RSS floor ~1 MiB)" if SPAWN else
                     f"no C compiler: wait4 from Python (peak RSS floor = this harness's RSS, "
                     f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)"))
            print()
        sys.stdout.flush()
        results, crashed = [], False
        for corpus in a.corpora:
            corpus = os.path.abspath(corpus)
            mp = os.path.join(corpus, "corpus.json")
            if not os.path.exists(mp):
                print(f"compare: {corpus}: no corpus.json (make it with benches/gen_corpus.py)", file=sys.stderr)
                return 2
            man = json.load(open(mp))
            for k in ("db", "opencode_data_dir", "claude_config_dir", "codex_home"):   # relative to the corpus
                if isinstance(man.get(k), str) and not os.path.isabs(man[k]):
                    man[k] = os.path.join(corpus, man[k])
            cmds, nbytes, nfiles = build_cmds(man, corpus, sd, ccusage, scratch, base_env, a.no_peers)
            log(f"{man['mode']} {man.get('size')}: {nbytes:,} bytes, {len(cmds)} commands x {a.runs} runs")
            man["_load_before"] = "%.2f" % os.getloadavg()[0]
            bench(cmds, a.runs, a.timeout, mem, scratch, a.budget)
            man["_load_after"] = "%.2f" % os.getloadavg()[0]
            text, res = report(corpus, man, nbytes, nfiles, cmds, a.runs)
            print(text)
            print()
            sys.stdout.flush()
            results.append(res)
            crashed |= any(c.crashed() for c in cmds)
        g = growth(results)
        if g:
            print(g)
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"binary": a.bin, "sha256": sha, "version": ver, "results": results}, f, indent=1, default=str)
        if crashed:
            print("**A command crashed (see the tables above).**")
        return 1 if crashed else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
